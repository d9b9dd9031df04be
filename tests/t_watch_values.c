/*
 * Watchpoints with MPK_WATCH_VALUES, on both backends: the callback runs
 * once the access has completed (the memory holds the new value then) and
 * gets the watched bytes from before the instruction and from after it,
 * checked byte for byte.  An 8-byte range: the whole range each time, for
 * a 64-bit store and for a store of its byte 3.  A 200-byte range: 64
 * bytes from the accessed address, fewer at the end of the range.  A read
 * watch: old and new the same.  A read-modify-write under a read and
 * write watch: a read, then a write, both with the add's before and after.
 * Without the flag: value fields NULL and 0, callback before the store.
 */
#include "t.h"

struct rec {
	int n, writes;
	struct mpk_watch_hit last;
	uint8_t old[MPK_WATCH_VALUE_MAX], now[MPK_WATCH_VALUE_MAX];
	uint64_t seen; /* *peek when the callback ran */
	volatile uint64_t *peek;
} rec;

static void on_hit(const struct mpk_watch_hit *h, void *arg)
{
	struct rec *r = arg;
	r->n++;
	r->writes += h->write;
	r->last = *h;
	if (h->old_value)
		memcpy(r->old, h->old_value, h->value_len);
	if (h->new_value)
		memcpy(r->now, h->new_value, h->value_len);
	if (r->peek)
		r->seen = *r->peek;
}

#define SEEN() __asm__ volatile("" ::: "memory")

static __attribute__((noinline)) void store64(volatile uint64_t *p, uint64_t v)
{
	*p = v;
}

static void bytes_are(const uint8_t *got, const void *want, size_t n, const char *what)
{
	if (memcmp(got, want, n)) {
		t_fail("%s: bytes differ", what);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, " %02x/%02x", got[i], ((const uint8_t *)want)[i]);
		fprintf(stderr, "\n");
	}
}

static void scenario(void)
{
	uint8_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(page != MAP_FAILED);
	volatile uint64_t *v = (volatile uint64_t *)(page + 128);
	*v = 0x0102030405060708;

	memset(&rec, 0, sizeof(rec));
	rec.peek = v;
	int id = mpk_watch((void *)v, 8, MPK_WATCH_WRITE | MPK_WATCH_VALUES, on_hit, &rec);
	REQUIRE(id >= 0);
	store64(v, 0x1122334455667788);
	SEEN();
	CHECK(rec.n == 1 && rec.last.write == 1 && rec.last.id == id);
	CHECK(rec.last.value_addr == (void *)v && rec.last.value_len == 8);
	uint64_t before = 0x0102030405060708, after = 0x1122334455667788;
	bytes_are(rec.old, &before, 8, "old of the first store");
	bytes_are(rec.now, &after, 8, "new of the first store");
	CHECK(rec.seen == after); /* called after the store */
	CHECK(rec.last.frames[0] == rec.last.ip && rec.last.nframes >= 2);
	CHECK((uintptr_t)rec.last.ip >= (uintptr_t)store64 && (uintptr_t)rec.last.ip < (uintptr_t)store64 + 512);

	/* Byte 3 alone: the whole 8-byte range before and after. */
	((volatile uint8_t *)v)[3] = 0xee;
	SEEN();
	CHECK(rec.n == 2 && rec.last.offset == 3 && rec.last.value_len == 8);
	before = after;
	after = 0x11223344ee667788;
	bytes_are(rec.old, &before, 8, "old of the byte store");
	bytes_are(rec.now, &after, 8, "new of the byte store");
	CHECK(mpk_unwatch(id) == 0);

	/* A long range: 64 bytes from the address accessed, up to its end. */
	uint8_t *buf = page + 1024;
	for (int i = 0; i < 200; i++)
		buf[i] = (uint8_t)i;
	memset(&rec, 0, sizeof(rec));
	id = mpk_watch(buf, 200, MPK_WATCH_WRITE | MPK_WATCH_VALUES, on_hit, &rec);
	REQUIRE(id >= 0);
	((volatile uint8_t *)buf)[20] = 0xaa;
	SEEN();
	CHECK(rec.n == 1 && rec.last.value_addr == buf + 20 && rec.last.value_len == MPK_WATCH_VALUE_MAX);
	uint8_t want[MPK_WATCH_VALUE_MAX];
	for (int i = 0; i < MPK_WATCH_VALUE_MAX; i++)
		want[i] = (uint8_t)(20 + i);
	bytes_are(rec.old, want, MPK_WATCH_VALUE_MAX, "old of the long range");
	want[0] = 0xaa;
	bytes_are(rec.now, want, MPK_WATCH_VALUE_MAX, "new of the long range");
	((volatile uint8_t *)buf)[190] = 0xbb;
	SEEN();
	CHECK(rec.n == 2 && rec.last.value_addr == buf + 190 && rec.last.value_len == 10);
	CHECK(rec.old[0] == 190 && rec.now[0] == 0xbb && rec.now[9] == 199);
	CHECK(mpk_unwatch(id) == 0);

	/* A read watch: the value read, unchanged. */
	memset(&rec, 0, sizeof(rec));
	id = mpk_watch((void *)v, 8, MPK_WATCH_READ | MPK_WATCH_VALUES, on_hit, &rec);
	REQUIRE(id >= 0);
	uint64_t x = *v;
	SEEN();
	CHECK(x == after && rec.n == 1 && rec.last.write == 0 && rec.last.value_len == 8);
	bytes_are(rec.old, &after, 8, "old of a read");
	bytes_are(rec.now, &after, 8, "new of a read");
	CHECK(mpk_unwatch(id) == 0);

	/* A read-modify-write: its read and its write, each with the add's
	 * before and after. */
	memset(&rec, 0, sizeof(rec));
	*v = 41;
	id = mpk_watch((void *)v, 8, MPK_WATCH_READ | MPK_WATCH_WRITE | MPK_WATCH_VALUES, on_hit, &rec);
	REQUIRE(id >= 0);
	__asm__ volatile("addq $1, %0" : "+m"(*v));
	SEEN();
	CHECK(mpk_unwatch(id) == 0); /* before *v is read below */
	CHECK(rec.n == 2 && rec.writes == 1 && *v == 42);
	before = 41;
	after = 42;
	bytes_are(rec.old, &before, 8, "old of the add");
	bytes_are(rec.now, &after, 8, "new of the add");

	/* Without the flag: no values, and the callback runs before. */
	memset(&rec, 0, sizeof(rec));
	rec.peek = v;
	id = mpk_watch((void *)v, 8, MPK_WATCH_WRITE, on_hit, &rec);
	REQUIRE(id >= 0);
	store64(v, 7);
	SEEN();
	CHECK(rec.n == 1 && rec.seen == 42 && *v == 7);
	CHECK(rec.last.old_value == NULL && rec.last.new_value == NULL && rec.last.value_len == 0 &&
	      rec.last.value_addr == NULL);
	CHECK(mpk_unwatch(id) == 0);

	/* The flag alone asks for nothing. */
	CHECK_ERR(mpk_watch((void *)v, 8, MPK_WATCH_VALUES, on_hit, &rec), EINVAL);
	munmap(page, 4096);
}

int main(void)
{
#if !defined(__x86_64__)
	t_skip("the read-modify-write instruction here is x86-64's");
#endif
	return t_both_backends(scenario);
}
