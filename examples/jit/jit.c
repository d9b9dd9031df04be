/* SPDX-License-Identifier: MIT */
/*
 * A tiny JIT whose code is W^X through a domain.  It compiles arithmetic
 * expressions in x to x86-64 into code memory of the domain "jit" (every
 * thread: read-only, so every thread runs it), and recompiles them, one
 * after the other, while worker threads keep running whatever function is
 * current and check each result against an interpreter.  Only the main
 * thread, inside MPK_WITH(jit, MPK_RW), can write the code; on hw the
 * workers run on meanwhile (keys never govern instruction fetch), on soft
 * the page flips to rw- for that moment and they wait in mpkit's handler.
 *
 *   jit [--threads N] [--rounds R] [EXPR...]   compile, patch, run, check
 *   jit --stray                                a worker writes the code
 *                                              outside the window: the
 *                                              fault report names "jit"
 */
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <pthread.h>
#include <time.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compile.h"
#include "mpkit.h"

#define SLOT 512 /* bytes of code per function; two slots alternate */
#define XS 16    /* each worker runs x = 0..XS-1 */

struct version {
	jit_fn fn;
	const char *expr;
	int64_t want[XS];
	int round;
};

static mpk_domain *jit;
static uint8_t *code;
static struct version versions[2];
static struct version *current;
static volatile int stop;
static int nthreads = 4, running; /* workers started */
static int seen[64];
static unsigned long calls[64], wrong[64];

static const char *const default_exprs[] = {
	"x*x+1", "(x+3)*(x-2)", "x*x*x-7*x+12", "1000/(x+1)", "(x*5+3)/2-x",
	"((x+1)*(x+2)*(x+3))/6", "x-x*x+x*x*x-x*x*x*x", "42",
};

/* x86 fetches coherently, but a thread may still run stale instructions it
 * fetched before the store: the cross-modifying protocol wants a
 * serialising step in every thread that runs the new code.  One
 * membarrier() gives it to all of them. */
static void sync_core(void)
{
	static int state;
	if (!state)
		state = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) ? -1 : 1;
	if (state > 0)
		syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
}

static void *worker(void *arg)
{
	int me = (int)(intptr_t)arg;

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		struct version *v = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
		for (int x = 0; x < XS; x++) {
			calls[me]++;
			if (v->fn(x) != v->want[x])
				wrong[me]++;
		}
		__atomic_store_n(&seen[me], v->round, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Compile expr into the slot nobody runs, then make it current. */
static int patch(const char *expr, int round)
{
	struct version *v = &versions[round % 2];
	uint8_t *slot = code + (round % 2) * SLOT;
	size_t n = 0;
	int ok;

	for (int x = 0; x < XS; x++) {
		v->want[x] = jit_eval(expr, x, &ok);
		if (!ok) {
			fprintf(stderr, "jit: cannot evaluate \"%s\" at x=%d\n", expr, x);
			return -1;
		}
	}
	MPK_WITH(jit, MPK_RW) {
		n = jit_compile(expr, slot, SLOT);
	}
	if (!n) {
		fprintf(stderr, "jit: cannot compile \"%s\"\n", expr);
		return -1;
	}
	sync_core();
	v->fn = (jit_fn)slot;
	v->expr = expr;
	v->round = round;
	__atomic_store_n(&current, v, __ATOMIC_RELEASE);
	/* The other slot is rewritten next: wait until no worker runs it. */
	for (int i = 0; i < running; i++)
		while (__atomic_load_n(&seen[i], __ATOMIC_ACQUIRE) < round)
			nanosleep(&(struct timespec){ 0, 10000 }, NULL);
	return 0;
}

static void *stray(void *arg)
{
	(void)arg;
	fprintf(stderr, "jit: a worker writes the code outside the window:\n");
	code[0] = 0xcc;
	return NULL;
}

int main(int argc, char **argv)
{
	int rounds = 1000, first = 1;
	pthread_t t[64];

	for (; first < argc && !strncmp(argv[first], "--", 2); first++) {
		if (!strcmp(argv[first], "--threads") && first + 1 < argc)
			nthreads = atoi(argv[++first]);
		else if (!strcmp(argv[first], "--rounds") && first + 1 < argc)
			rounds = atoi(argv[++first]);
		else if (strcmp(argv[first], "--stray"))
			goto usage;
	}
	if (nthreads < 1 || nthreads > 64 || rounds < 1)
		goto usage;
	const char *const *exprs = first < argc ? (const char *const *)argv + first : default_exprs;
	int nexprs = first < argc ? argc - first : (int)(sizeof(default_exprs) / sizeof(*default_exprs));

	jit = mpk_domain_create("jit", MPK_READ, MPK_DOMAIN_SHARED);
	code = jit ? mpk_code_alloc(jit, 2 * SLOT) : NULL;
	if (!code) {
		perror("jit: mpk_code_alloc");
		return 1;
	}
	printf("jit: backend %s, code at %p: %s\n", mpk_backend_name(mpk_backend()), (void *)code,
	       mpk_domain_key(jit) >= 0 ? "rwx pages, writable only by the thread inside MPK_WITH (key)"
					: "r-x, flipped to rw- by mprotect while the main thread writes");
	if (patch(exprs[0], 1))
		return 1;
	if (argc > 1 && !strcmp(argv[1], "--stray")) {
		mpk_fault_handler_install(NULL, NULL);
		pthread_create(&t[0], NULL, stray, NULL);
		pthread_join(t[0], NULL);
		printf("jit: the stray write went through (soft backend: rights are process-wide)\n");
		return 2;
	}
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i)) {
			perror("jit: pthread_create");
			return 1;
		} else {
			running++;
		}
	for (int r = 2; r <= rounds; r++)
		if (patch(exprs[(r - 1) % nexprs], r))
			return 1;
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	unsigned long all = 0, bad = 0;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(t[i], NULL);
		all += calls[i];
		bad += wrong[i];
	}
	for (int x = 0; x < 4; x++)
		printf("jit: %s at x=%d: %lld\n", current->expr, x, (long long)current->fn(x));
	printf("jit: %d patches of %d expressions while %d threads ran them: %lu calls, %lu wrong\n",
	       rounds, nexprs, nthreads, all, bad);
	return bad ? 1 : 0;
usage:
	fprintf(stderr, "usage: jit [--threads N] [--rounds R] [--stray] [EXPR...]\n");
	return 2;
}
