/*
 * Attack: a scope rewritten while fork() runs.  The heap's fork handlers
 * open the sealed metadata for the forking thread in prepare and close it
 * in the parent's and the child's handler; the scope of that open was
 * kept in the heap layer's writable data meanwhile, and fork() takes long
 * enough for another thread to rewrite it.  The attacker's thread reads
 * the heap-meta domain's handle from the seal page (readable by all),
 * and while the main thread forks it rewrites every word of the heap
 * layer's writable objects equal to it, and the rights after it, to a
 * domain the forking thread holds no rights to and MPK_RW: closing that
 * scope set the domain to read-write for the thread (in parent and
 * child) and left the metadata open to it.  After each fork, parent and
 * child must hold no rights to either.  Sealed; both backends.
 */
#include <pthread.h>
#include <sys/wait.h>

#include "t_attack.h"
#include "../src/heap/heap.h" /* the seal page's shape */

enum { FORKS = 150 };

static struct t_obj obj[512];
static int nobj;
static mpk_domain *meta_dom, *victim;
static volatile int stop;

static bool writable(uintptr_t a)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char l[512];
	bool w = false;

	while (f && fgets(l, sizeof(l), f)) {
		unsigned long lo, hi;
		char perm[8];
		if (sscanf(l, "%lx-%lx %7s", &lo, &hi, perm) == 3 && a >= lo && a < hi)
			w = perm[1] == 'w';
	}
	if (f)
		fclose(f);
	return w;
}

static void *attacker(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		for (int i = 0; i < nobj; i++) {
			uintptr_t *p = (uintptr_t *)((obj[i].at + 7) & ~(uintptr_t)7);
			for (; (uintptr_t)(p + 2) <= obj[i].at + obj[i].size; p++)
				if (__atomic_load_n(p, __ATOMIC_RELAXED) == (uintptr_t)meta_dom) {
					mpk_scope *s = (mpk_scope *)p;
					__atomic_store_n(&s->saved, MPK_RW, __ATOMIC_RELAXED);
					__atomic_store_n(&s->domain, victim, __ATOMIC_RELAXED);
				}
		}
	return NULL;
}

static int held(void)
{
	return (mpk_get(victim) != MPK_NONE) | (mpk_get(meta_dom) != MPK_NONE) << 1;
}

int main(void)
{
	struct t_obj seal;
	mpk_domain *d;
	mpk_heap *h;
	pthread_t t;

#ifdef __SANITIZE_THREAD__
	t_skip("the attacker's writes race the library's on purpose");
#endif
	t_setenv("MPKIT_HEAP_META", "closed");
	REQUIRE((d = mpk_domain_create("attack-fork", MPK_RW, 0)) != NULL);
	REQUIRE((h = mpk_heap_create(d, 0)) != NULL);
	REQUIRE((victim = mpk_domain_create("attack-fork-victim", MPK_NONE, 0)) != NULL);
	REQUIRE(t_attack_heap_symbol("mpk__seal_pg", &seal));
	meta_dom = ((const union mpk__seal_page *)seal.at)->s.dom;
	REQUIRE(meta_dom);
	int n = t_attack_heap_objects(obj, 512);
	for (int i = 0; i < n; i++)
		if (writable(obj[i].at))
			obj[nobj++] = obj[i];
	REQUIRE(held() == 0);

	REQUIRE(pthread_create(&t, NULL, attacker, NULL) == 0);
	int bad_parent = 0, bad_child = 0;
	for (int i = 0; i < FORKS && !bad_parent && !bad_child; i++) {
		pid_t pid = fork();
		REQUIRE(pid >= 0);
		if (!pid)
			_exit(held());
		int st;
		REQUIRE(waitpid(pid, &st, 0) == pid);
		if (held())
			bad_parent = held();
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			bad_child = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	REQUIRE(pthread_join(t, NULL) == 0);
	if (bad_parent)
		t_fail("after a fork the parent holds rights to %s%s", bad_parent & 1 ? "the victim domain " : "",
		       bad_parent & 2 ? "the heap metadata" : "");
	if (bad_child)
		t_fail("after a fork the child held rights it had not (status %d: 1 the victim, 2 the metadata)",
		       bad_child);
	void *p = mpk_heap_malloc(h, 64);
	CHECK(p && mpk_heap_free(h, p) == 0);
	REQUIRE(mpk_heap_destroy(h) == 0);
	t_setenv("MPKIT_HEAP_META", NULL);
	return t_done();
}
