/*
 * Watchpoints on read-modify-write instructions (add, xadd, xchg to
 * memory), which compilers emit for `*p += 1` (clang even for a volatile
 * p): the CPU reports their fault as a write (QEMU: an unlocked add as
 * the read that comes first), yet they read the
 * watched memory first.  A read and write watch sees each as a read, then
 * a write, at the same instruction; a read watch sees the read; a write
 * watch the write only.  A plain store is a write only.  Both backends.
 */
#include "t.h"

struct rec {
	int n, reads, writes;
	void *ip[2];
} rec;

static void on_hit(const struct mpk_watch_hit *h, void *arg)
{
	struct rec *r = arg;
	if (r->n < 2)
		r->ip[r->n] = h->ip;
	r->n++;
	r->reads += !h->write;
	r->writes += h->write;
}

#define SEEN() __asm__ volatile("" ::: "memory")

static void rmw_ops(volatile uint64_t *p)
{
	uint64_t one = 1;
	__asm__ volatile("addq $1, %0" : "+m"(*p));
	__asm__ volatile("lock xaddq %1, %0" : "+m"(*p), "+r"(one));
	__asm__ volatile("xchgq %1, %0" : "+m"(*p), "+r"(one));
}

/* Three read-modify-writes, then a plain store, under a watch of flags. */
static void run(volatile uint64_t *p, unsigned flags, int reads, int writes)
{
	memset(&rec, 0, sizeof(rec));
	*p = 10;
	int id = mpk_watch((void *)p, 8, flags, on_hit, &rec);
	REQUIRE(id >= 0);
	rmw_ops(p);
	SEEN();
	*p = 5;
	SEEN();
	CHECK(mpk_unwatch(id) == 0);
	CHECK(*p == 5);
	if (rec.reads != reads || rec.writes != writes)
		t_fail("flags %u: %d reads, %d writes reported (want %d, %d)", flags, rec.reads,
		       rec.writes, reads, writes);
	if (reads && writes)
		CHECK(rec.ip[0] == rec.ip[1]); /* the add's read, then its write */
}

static void scenario(void)
{
	uint8_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(page != MAP_FAILED);
	volatile uint64_t *p = (volatile uint64_t *)(page + 256);

	run(p, MPK_WATCH_READ | MPK_WATCH_WRITE, 3, 4);
	run(p, MPK_WATCH_READ, 3, 0);
	run(p, MPK_WATCH_WRITE, 0, 4);
	/* The values went through: 10 + 1, + 1 (xadd: 11 out), swapped for
	 * that 11 (xchg). */
	memset(&rec, 0, sizeof(rec));
	*p = 10;
	rmw_ops(p);
	CHECK(*p == 11);
	munmap(page, 4096);
}

int main(void)
{
#if !defined(__x86_64__)
	t_skip("the read-modify-write instructions here are x86-64's");
#endif
	return t_both_backends(scenario);
}
