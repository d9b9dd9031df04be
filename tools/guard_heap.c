/* SPDX-License-Identifier: MIT */
/*
 * The guarded libraries' heap blocks (docs/guard.md, "Heap blocks"), for
 * each library guarded with --heap (MPKIT_GUARD_HEAP=1, or its entry's
 * ",heap"): the helper exports the C
 * library's allocation calls, and a block that a guarded
 * library's own code allocates while a thread is inside a gate comes
 * from a heap in that library's domain; every other call goes
 * to the next allocator (the C library's, or `mpkit run`'s drop-in when it
 * is preloaded after this helper).  free(), realloc() and
 * malloc_usable_size() from anywhere find a block's owner by address
 * (mpk_domain_of(): a window table or the adopted ranges, no lock).
 * Each library block is recorded by address (guard_blocks.c), for the
 * fault reports that name it.
 *
 * "The library's own code": the caller's return address lies in the
 * library's text, or is the gate's own (an export that tail-calls
 * malloc: the innermost gate's library).  A callback into the program runs inside the gate too, but
 * its blocks are the program's; a block the C library allocates for the
 * library (strdup(), fopen()) stays ordinary.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guard.h"
#include "unwind.h"

#ifndef __GLIBC__
void *pvalloc(size_t n); /* glibc's, which musl's <malloc.h> lacks */
#endif

#define EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define RA __builtin_extract_return_addr(__builtin_return_address(0))

static int heaps; /* 0 until a library's heap is made */

/* The next allocator's calls.  dlsym() may allocate (glibc's dlerror
 * buffer): while they are being looked up, blocks come from boot[]. */
static struct {
	void *(*malloc)(size_t);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void (*free)(void *);
	void *(*memalign)(size_t, size_t);
	size_t (*usable)(void *);
} nx;
static int resolved; /* 0, 1 looking up, 2 done */
static _Alignas(16) char boot[1 << 16];
static size_t boot_used;

static int in_boot(const void *p)
{
	return (const char *)p >= boot && (const char *)p < boot + sizeof(boot);
}

/* 16 bytes of header keep the size, for realloc(). */
static void *boot_alloc(size_t n, size_t align)
{
	if (align < 16)
		align = 16;
	size_t at = __atomic_load_n(&boot_used, __ATOMIC_RELAXED), start;
	do {
		start = (at + 16 + align - 1) & ~(align - 1);
		if (n > sizeof(boot) || start + n > sizeof(boot)) {
			errno = ENOMEM;
			return NULL;
		}
	} while (!__atomic_compare_exchange_n(&boot_used, &at, start + n, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	*(size_t *)(boot + start - 16) = n;
	return boot + start; /* static, so zeroed: calloc's too */
}

/* The allocator after this helper; opened by dlopen() (mpk_guard_library())
 * the helper is last, and musl's RTLD_NEXT then finds nothing: the
 * first one in the process, unless that is this helper's own. */
static void *next_sym(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);
	Dl_info at, self;

	if (!f && (f = dlsym(RTLD_DEFAULT, name)) && dladdr(f, &at) && dladdr((void *)next_sym, &self) &&
	    at.dli_fbase == self.dli_fbase)
		f = NULL;
	return f;
}

static void resolve(void)
{
	int no = 0;

	if (!__atomic_compare_exchange_n(&resolved, &no, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	*(void **)&nx.malloc = next_sym("malloc");
	*(void **)&nx.calloc = next_sym("calloc");
	*(void **)&nx.realloc = next_sym("realloc");
	*(void **)&nx.free = next_sym("free");
	*(void **)&nx.memalign = next_sym("memalign");
	*(void **)&nx.usable = next_sym("malloc_usable_size");
	if (!nx.malloc || !nx.calloc || !nx.realloc || !nx.free || !nx.memalign || !nx.usable) {
		static const char msg[] = "mpkit guard: the next allocator's calls not found\n";
		(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
		abort();
	}
	__atomic_store_n(&resolved, 2, __ATOMIC_RELEASE);
}

/* The next allocator, or NULL while it is being looked up. */
static inline int ready(void)
{
	if (likely(__atomic_load_n(&resolved, __ATOMIC_ACQUIRE) == 2))
		return 1;
	resolve();
	return __atomic_load_n(&resolved, __ATOMIC_ACQUIRE) == 2;
}

/* sqlite3_malloc64, CRYPTO_malloc, xmlStrdup, sqlite3_mprintf: the
 * program writes what these give it.  The library's out= and keep=
 * words override this, export by export (guard_preload.c). */
int guard_hands_out(const char *name)
{
	static const char *const says[] = { "alloc", "dup", "printf" };

	for (size_t i = 0; i < sizeof(says) / sizeof(*says); i++)
		if (strcasestr(name, says[i]))
			return 1;
	return 0;
}

/* The heap, when the block asked for from ra is the library's: its own
 * code asks, inside a gate, and the call the program made is not one
 * that allocates for the program (its name says so, or out= does). */
static inline mpk_heap *for_lib(void *ra)
{
	if (likely(!__atomic_load_n(&heaps, __ATOMIC_ACQUIRE)))
		return NULL;
	void *gate = guard_inner_return();
	if (likely(!gate))
		return NULL;
	struct guard_lib *l = ra == gate ? guard_inner_fn()->lib : guard_lib_at((uintptr_t)ra);
	mpk_heap *h = l ? __atomic_load_n(&l->heap, __ATOMIC_ACQUIRE) : NULL;
	if (!h)
		return NULL;
	const struct guard_fn *in = guard_entry_fn(l);
	return in && in->hands_out ? NULL : h;
}

/* The span of every block the heap handed out: a pointer outside it is
 * not the heap's without asking mpkit (glibc's brk heap, mostly). */
static uintptr_t span_lo = UINTPTR_MAX, span_hi;

static void *spanned(void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p, lo = __atomic_load_n(&span_lo, __ATOMIC_RELAXED),
		  hi = __atomic_load_n(&span_hi, __ATOMIC_RELAXED);

	if (!p)
		return p;
	while (a < lo && !__atomic_compare_exchange_n(&span_lo, &lo, a, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	while (a + n > hi && !__atomic_compare_exchange_n(&span_hi, &hi, a + n, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	return p;
}

/* The library whose heap p is a block of, or NULL. */
static inline struct guard_lib *owned(const void *p)
{
	if (likely(!__atomic_load_n(&heaps, __ATOMIC_ACQUIRE)))
		return NULL;
	if ((uintptr_t)p < __atomic_load_n(&span_lo, __ATOMIC_RELAXED) ||
	    (uintptr_t)p >= __atomic_load_n(&span_hi, __ATOMIC_RELAXED))
		return NULL;
	int err = errno;
	struct guard_lib *l = guard_lib_of(mpk_domain_of(p));
	errno = err;
	return l && __atomic_load_n(&l->heap, __ATOMIC_ACQUIRE) ? l : NULL;
}

int guard_heap_start(struct guard_lib *l)
{
	if (!l->use_heap)
		return 0;
	mpk_heap *h = mpk_heap_create(l->domain, 0);
	if (!h)
		return -1;
	guard_blocks_start();
	__atomic_store_n(&l->heap, h, __ATOMIC_RELEASE);
	__atomic_store_n(&heaps, 1, __ATOMIC_RELEASE);
	return 1;
}

int guard_heap_block(const struct guard_lib *l, uintptr_t a)
{
	return l->heap && (a < l->data_lo || a >= l->data_hi);
}

/* A library heap's call that hands out or takes back a block runs after
 * guard_blocks_begin(), and ends here: p (n bytes asked for) recorded. */
static void *made(void *p, size_t n)
{
	guard_blocks_end(p, n);
	return spanned(p, n);
}

static void *lib_alloc(mpk_heap *h, size_t align, size_t n)
{
	guard_blocks_begin(NULL);
	return made(align <= 16 ? mpk_heap_malloc(h, n) : mpk_heap_aligned_alloc(h, align, n), n);
}

EXPORT void *malloc(size_t n)
{
	mpk_heap *h = for_lib(RA);

	if (h)
		return lib_alloc(h, 16, n);
	return ready() ? nx.malloc(n) : boot_alloc(n, 16);
}

EXPORT void *calloc(size_t k, size_t n)
{
	mpk_heap *h = for_lib(RA);

	if (h) {
		guard_blocks_begin(NULL);
		return made(mpk_heap_calloc(h, k, n), k * n); /* no overflow: it succeeded */
	}
	if (ready())
		return nx.calloc(k, n);
	size_t len;
	if (__builtin_mul_overflow(k, n, &len)) {
		errno = ENOMEM;
		return NULL;
	}
	return boot_alloc(len, 16);
}

EXPORT void free(void *p)
{
	if (!p || in_boot(p))
		return;
	struct guard_lib *o = owned(p);
	if (o) {
		int err = errno;
		(void)guard_blocks_begin(p);
		(void)mpk_heap_free(o->heap, p); /* misuse: mpkit's report, abort */
		guard_blocks_end(NULL, 0);
		errno = err;
		return;
	}
	if (ready())
		nx.free(p);
}

/* A block of library o's heap realloc'd from outside becomes the
 * program's: a copy in the next allocator (read with the domain open,
 * under --deny all), the old block freed; realloc'd by another guarded
 * library's code (h), a copy in that library's heap. */
static void *move_out(struct guard_lib *o, mpk_heap *h, void *p, size_t n)
{
	size_t have = mpk_heap_usable_size(o->heap, p);
	void *q = h ? lib_alloc(h, 16, n) : nx.malloc(n);

	if (!q)
		return NULL;
	int was = mpk_get(o->domain);
	if (was == MPK_NONE && mpk_set(o->domain, MPK_READ))
		abort();
	memcpy(q, p, have < n ? have : n);
	if (was == MPK_NONE && mpk_set(o->domain, was))
		abort();
	(void)guard_blocks_begin(p);
	(void)mpk_heap_free(o->heap, p);
	guard_blocks_end(NULL, 0);
	return q;
}

/* realloc inside library heap h: p forgotten while the heap moves it
 * (recorded again as it was if that fails). */
static void *realloc_in(mpk_heap *h, void *p, size_t n)
{
	size_t was = guard_blocks_begin(p);
	void *q = mpk_heap_realloc(h, p, n);
	if (!q && was != (size_t)-1) {
		guard_blocks_end(p, was);
		return NULL;
	}
	return made(q, n);
}

static void *realloc_from(void *ra, void *p, size_t n)
{
	mpk_heap *h = for_lib(ra);

	if (!p)
		return h ? lib_alloc(h, 16, n) : ready() ? nx.malloc(n) : boot_alloc(n, 16);
	if (!n) { /* glibc: frees, and returns NULL */
		free(p);
		return NULL;
	}
	struct guard_lib *o = owned(p);
	if (o)
		return h == o->heap ? realloc_in(h, p, n) : ready() ? move_out(o, h, p, n) : NULL;
	if (!ready() || in_boot(p)) {
		void *q = ready() ? nx.malloc(n) : boot_alloc(n, 16);
		if (q && in_boot(p)) {
			size_t have = *(size_t *)((char *)p - 16);
			memcpy(q, p, have < n ? have : n);
		}
		return q;
	}
	return nx.realloc(p, n);
}

EXPORT void *realloc(void *p, size_t n)
{
	return realloc_from(RA, p, n);
}

EXPORT void *reallocarray(void *p, size_t k, size_t n)
{
	size_t len;

	if (__builtin_mul_overflow(k, n, &len)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc_from(RA, p, len);
}

/* glibc's memalign(): an alignment that is not a power of two is
 * rounded up to one. */
static void *aligned_from(void *ra, size_t align, size_t n)
{
	mpk_heap *h = for_lib(ra);

	if (h && align <= ((size_t)2 << 20)) {
		if (align & (align - 1))
			align = (size_t)1 << (64 - __builtin_clzl(align));
		return lib_alloc(h, align, n);
	}
	return ready() ? nx.memalign(align, n) : boot_alloc(n, align & (align - 1) ? 16 : align);
}

EXPORT void *memalign(size_t align, size_t n)
{
	if (align > SIZE_MAX / 2 + 1) {
		errno = EINVAL;
		return NULL;
	}
	return aligned_from(RA, align, n);
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	if (!align || (align & (align - 1))) {
		errno = EINVAL;
		return NULL;
	}
	return aligned_from(RA, align, n);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (!align || (align & (align - 1)) || align % sizeof(void *))
		return EINVAL;
	int err = errno;
	void *p = aligned_from(RA, align, n);
	if (!p) {
		int e = errno;
		errno = err;
		return e ? e : ENOMEM;
	}
	*out = p;
	errno = err;
	return 0;
}

EXPORT void *valloc(size_t n)
{
	return aligned_from(RA, (size_t)getpagesize(), n);
}

EXPORT void *pvalloc(size_t n)
{
	size_t pg = (size_t)getpagesize();

	if (n > SIZE_MAX - pg) {
		errno = ENOMEM;
		return NULL;
	}
	return aligned_from(RA, pg, n ? (n + pg - 1) & ~(pg - 1) : pg);
}

EXPORT size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	if (in_boot(p))
		return *(size_t *)((char *)p - 16);
	struct guard_lib *o = owned(p);
	if (o)
		return mpk_heap_usable_size(o->heap, p);
	return ready() ? nx.usable(p) : 0;
}

/* Looked up before main(), while one thread runs. */
__attribute__((constructor(101))) static void heap_start(void)
{
	(void)ready();
}
