/*
 * Watchpoints (mpk_watch), on both backends.  A write watch on 8 bytes in
 * the middle of a page: each of 5 writes there is reported once (address,
 * offset, write, the writing thread, the faulting instruction inside the
 * writing function, a backtrace starting at it) and completes (the value
 * is there, the program runs on); writes and reads elsewhere in the page,
 * and reads of the range, go through silently.  Another thread's write is
 * reported with its tid.  A read watch reports reads (and not writes when
 * only MPK_WATCH_READ is asked), and its callback can read the watched
 * memory (so can an unwinder reading a loader's data there).  After mpk_unwatch() nothing is reported
 * and the page is as it was (rw-p, key 0).  hw: the page carries the key of
 * mpkit's "mpk-watch" domain while watched.
 */
#include <pthread.h>

#include "t_code.h"

struct rec {
	int n;
	struct mpk_watch_hit last;
	void *frame0;
	int nframes;
	int writes;
	volatile uint32_t *peek; /* read by the callback, if set */
	uint32_t seen;
} rec;

static void on_hit(const struct mpk_watch_hit *h, void *arg)
{
	struct rec *r = arg;
	r->n++;
	r->last = *h;
	r->writes += h->write;
	r->frame0 = h->nframes > 0 ? h->frames[0] : NULL;
	r->nframes = h->nframes;
	if (r->peek)
		r->seen = *r->peek;
}

static __attribute__((noinline)) void store(volatile uint64_t *p, uint64_t v)
{
	*p = v;
}

static volatile uint64_t *target;

/* The callback runs in a signal handler: the compiler must not keep the
 * counters in registers across a watched access. */
#define SEEN() __asm__ volatile("" ::: "memory")

static void *other_thread(void *arg)
{
	*(pid_t *)arg = (pid_t)syscall(SYS_gettid);
	store(target, 77);
	return NULL;
}

static void scenario(void)
{
	uint8_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(page != MAP_FAILED);
	target = (volatile uint64_t *)(page + 512);

	memset(&rec, 0, sizeof(rec));
	int id = mpk_watch((void *)target, 8, MPK_WATCH_WRITE, on_hit, &rec);
	REQUIRE(id >= 0);
	if (mpk_backend() == MPK_BACKEND_HW) {
		int k = t_vma_pkey(page);
		CHECK(k > 0);
		struct mpk_info in;
		REQUIRE(mpk_info(&in) == 0);
		CHECK(in.keys_in_use == 1); /* the watch domain's */
	}
	for (uint64_t v = 1; v <= 5; v++) {
		store(target, v);
		CHECK(*target == v);
		CHECK(rec.n == (int)v);
	}
	CHECK(rec.writes == 5);
	CHECK(rec.last.id == id);
	CHECK(rec.last.addr == (void *)target && rec.last.offset == 0 && rec.last.write == 1);
	CHECK(rec.last.tid == (pid_t)syscall(SYS_gettid));
	/* Inside store(): a few instructions, more under sanitizers. */
	CHECK((uintptr_t)rec.last.ip >= (uintptr_t)store && (uintptr_t)rec.last.ip < (uintptr_t)store + 512);
	CHECK(rec.frame0 == rec.last.ip && rec.nframes >= 2);
	/* The rest of the page, and reads: silent, and they work. */
	page[0] = 9;
	page[4095] = 8;
	((volatile uint8_t *)target)[8] = 7; /* just past the range */
	SEEN();
	CHECK(page[0] == 9 && page[4095] == 8 && page[520] == 7 && *target == 5);
	CHECK(rec.n == 5);
	/* Another thread. */
	pthread_t t;
	pid_t tid = 0;
	REQUIRE(pthread_create(&t, NULL, other_thread, &tid) == 0);
	pthread_join(t, NULL);
	CHECK(rec.n == 6 && rec.last.tid == tid && *target == 77);
	/* A byte inside the range, not at its start. */
	((volatile uint8_t *)target)[5] = 1;
	SEEN();
	CHECK(rec.n == 7);
	CHECK(rec.last.offset == 5);

	/* A read watch on another range of the same page. */
	volatile uint32_t *r32 = (volatile uint32_t *)(page + 2048);
	struct rec rr = { .peek = r32, .seen = 99 };
	int rid = mpk_watch((void *)r32, 4, MPK_WATCH_READ, on_hit, &rr);
	REQUIRE(rid >= 0 && rid != id);
	uint32_t x = *r32;
	SEEN();
	CHECK(x == 0);
	CHECK(rr.n == 1);
	CHECK(rr.last.write == 0 && rr.last.id == rid);
	CHECK(rr.seen == 0); /* the callback read the watched value */
	*r32 = 3; /* not reported: reads only */
	SEEN();
	CHECK(rr.n == 1);
	x = *r32;
	SEEN();
	CHECK(x == 3 && rr.n == 2);
	CHECK(page[0] == 9 && rec.n == 7);
	CHECK(mpk_unwatch(rid) == 0);
	(void)*r32;
	SEEN();
	CHECK(rr.n == 2);

	CHECK(mpk_unwatch(id) == 0);
	store(target, 100);
	CHECK(*target == 100 && rec.n == 7);
	char perms[5];
	t_perms(page, perms);
	CHECK(!strcmp(perms, "rw-p"));
	if (mpk_backend() == MPK_BACKEND_HW)
		CHECK(t_vma_pkey(page) == 0);
	CHECK_ERR(mpk_unwatch(id), EINVAL);
	munmap(page, 4096);
}

int main(void)
{
	return t_both_backends(scenario);
}
