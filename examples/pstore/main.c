/* SPDX-License-Identifier: MIT */
/*
 * pstore: the crash test of a persistent store whose file is mapped into a
 * protection domain, writable only inside its commit.  See
 * docs/examples.md.
 *
 *	pstore [--no-guard] [--crashes N] [--seed S] FILE
 *
 * N times (default 100): a child opens FILE, commits records and, being
 * buggy, fires stray writes at random places of the mapped file between
 * commits; the parent SIGKILLs it at a random moment (0-10 ms), then
 * reopens the file and checks every byte: each committed record (every one
 * the child reported, at least) with its checksum and contents, and
 * nothing but zeros outside the records.  Guarded, every stray write
 * faults (the callback counts it and skips it); --no-guard maps the file
 * plainly, and the stray writes reach it.
 *
 * Exit status: 0 the file is clean after every crash, 1 it is not, 2 an
 * error.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store.h"

/* What a child tells its parent, one write() each (atomic on a pipe). */
struct msg {
	char what; /* 'R' open, 'C' committed, 'W' a stray write fired, 'F' it faulted */
	uint64_t seq;
};

static struct store st;
static int to_parent;
static sigjmp_buf stray_jmp;

static void tell(char what, uint64_t seq)
{
	struct msg m = { what, seq };
	(void)!write(to_parent, &m, sizeof(m));
}

/* Signal context. */
static int on_fault(const struct mpk_fault *f, void *arg)
{
	(void)arg;
	if (f->domain != st.d || !f->write)
		return MPK_FAULT_ABORT;
	tell('F', 0);
	siglongjmp(stray_jmp, 1);
}

static void stray_write(unsigned *seed)
{
	volatile unsigned char *at = st.base + (size_t)rand_r(seed) % STORE_SIZE;

	tell('W', 0);
	if (sigsetjmp(stray_jmp, 1) == 0)
		*at ^= (unsigned char)(rand_r(seed) | 1);
}

static void child(const char *path, bool guard, unsigned seed)
{
	struct store_rec r;

	if (store_open(&st, path, guard, false) ||
	    (guard && mpk_fault_handler_install(on_fault, NULL)))
		_exit(2);
	tell('R', 0); /* the kill's clock starts now */
	for (;;) {
		uint64_t n = st.head->n;
		store_expected(n, &r);
		if (store_commit(&st, r.data, r.len) != (long)n)
			_exit(0); /* full */
		tell('C', n);
		if (rand_r(&seed) % 4 == 0)
			stray_write(&seed);
		if (rand_r(&seed) % 8 == 0)
			usleep(50); /* now and then, an application doing other things */
	}
}

struct totals {
	unsigned long crashes, exits, committed, fired, faulted, bad, stray, torn;
	uint64_t last_n;
};

/* One life: start a child, read what it says, kill it, check the file.
 * Returns 0 if the file is clean. */
static int life(const char *path, bool guard, unsigned *seed, struct totals *t)
{
	int fd[2], status;
	long committed = -1;

	if (pipe(fd))
		return -1;
	unsigned cseed = (unsigned)rand_r(seed);
	int delay_us = rand_r(seed) % 10000;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(fd[0]);
		to_parent = fd[1];
		child(path, guard, cseed);
	}
	close(fd[1]);
	struct timespec t0, now;
	bool killed = false, ready = false;
	for (;;) {
		struct msg m[256];
		clock_gettime(CLOCK_MONOTONIC, &now);
		long us = !ready ? 0 : (now.tv_sec - t0.tv_sec) * 1000000L +
					       (now.tv_nsec - t0.tv_nsec) / 1000;
		if (ready && !killed && us >= delay_us) {
			kill(pid, SIGKILL); /* wherever it is */
			killed = true;
		}
		struct pollfd p = { fd[0], POLLIN, 0 };
		if (!killed && poll(&p, 1, (int)((delay_us - us) / 1000) + 1) <= 0)
			continue;
		ssize_t k = read(fd[0], m, sizeof(m));
		if (k <= 0)
			break;
		for (size_t i = 0; i < (size_t)k / sizeof(m[0]); i++) {
			if (m[i].what == 'R' && !ready) {
				ready = true; /* its working life starts */
				clock_gettime(CLOCK_MONOTONIC, &t0);
			}
			if (m[i].what == 'C')
				committed = (long)m[i].seq, t->committed++;
			t->fired += m[i].what == 'W';
			t->faulted += m[i].what == 'F';
		}
	}
	close(fd[0]);
	waitpid(pid, &status, 0);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		t->crashes++;
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		t->exits++; /* the store filled up before the kill */
	else {
		fprintf(stderr, "pstore: the child ended with status 0x%x\n", status);
		return -1;
	}

	struct store ro;
	struct store_check c;
	if (store_open(&ro, path, false, true)) {
		perror(path);
		return -1;
	}
	store_check(&ro, &c);
	store_close(&ro);
	t->bad += c.bad;
	t->stray += c.stray;
	t->torn += c.torn;
	t->last_n = c.n;
	if (c.bad || c.stray)
		printf("pstore: damage after life %lu: first at file offset %zu (n = %llu)\n",
		       t->crashes + t->exits, c.first, (unsigned long long)c.n);
	/* Every record the child reported committed must be there. */
	if (committed >= 0 && c.n <= (uint64_t)committed)
		t->bad++;
	return c.bad || c.stray || (committed >= 0 && c.n <= (uint64_t)committed);
}

int main(int argc, char **argv)
{
	unsigned long crashes = 100;
	unsigned seed = 1;
	bool guard = true;
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 1; i < argc - 1; i++) {
		if (!strcmp(argv[i], "--no-guard"))
			guard = false;
		else if (!strcmp(argv[i], "--crashes") && i + 1 < argc - 1)
			crashes = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc - 1)
			seed = (unsigned)strtoul(argv[++i], NULL, 10);
		else
			break;
	}
	if (i != argc - 1 || !crashes) {
		fprintf(stderr, "usage: pstore [--no-guard] [--crashes N] [--seed S] FILE\n");
		return 2;
	}
	const char *path = argv[argc - 1];
	/* A fresh store, made before the first life, so that a kill cannot
	 * fall before the file has its size and header. */
	struct store fresh;
	unlink(path);
	if (store_open(&fresh, path, false, false)) {
		perror(path);
		return 2;
	}
	store_close(&fresh);
	struct totals t = { 0 };
	unsigned long dirty = 0;
	for (unsigned long n = 0; n < crashes; n++) {
		int rc = life(path, guard, &seed, &t);
		if (rc < 0) {
			fprintf(stderr, "pstore: a child failed to run\n");
			return 2;
		}
		dirty += rc;
	}
	printf("pstore: %s, backend %s: %lu lives, %lu ended by SIGKILL at a random point"
	       " (%lu ran out of room)\n", guard ? "guarded (domain \"pstore\")" : "not guarded",
	       mpk_backend_name(mpk_backend()), crashes, t.crashes, t.exits);
	printf("pstore: %lu commits reported, %llu records in the file at the end, %lu"
	       " bad (summed over the reopens); %lu torn records left uncounted by a kill\n", t.committed,
	       (unsigned long long)t.last_n, t.bad, t.torn);
	printf("pstore: %lu stray writes fired, %lu faulted; records or pages with stray bytes"
	       " %lu (summed over the reopens); reopens finding damage %lu\n", t.fired, t.faulted, t.stray, dirty);
	printf("pstore: the file is %s\n", dirty ? "DAMAGED" : "clean after every crash");
	return dirty ? 1 : 0;
}
