/* SPDX-License-Identifier: MIT */
/*
 * libmpkit-malloc.so: the C library's allocation entry points on an mpkit
 * heap, for any program (LD_PRELOAD; `mpkit run`).  The blocks live in a
 * domain every thread holds read-write ("malloc"); the heap's metadata is
 * closed between calls where MPKIT_HEAP_META says (auto: closed on hw,
 * open on soft).  Semantics and errno are glibc's: realloc(p, 0) frees
 * and returns NULL, posix_memalign() leaves errno alone on a bad
 * alignment, malloc_usable_size(NULL) is 0.
 *
 * The heap is made by the drop-in's constructor (or by the first call
 * after it starts).  Until it is there, while it is being made, and
 * whenever a thread is already inside a call the drop-in made into mpkit
 * other than malloc() and free() (the C library allocating for mpkit; see
 * malloc() for those two), blocks come from the internal allocator
 * (boot.c); free() and realloc() tell the two apart by address.
 * libmpkit-malloc.so links libmpkit.so, so a program that links mpkit
 * too has one mpkit, which holds the "malloc" domain beside its own.
 * MPKIT_MALLOC_STATS=1 prints the calls, the metadata opens and the bytes
 * (live and mapped at exit, mapped at the peak); MPKIT_MALLOC_DEBUG=1
 * keeps each block's allocation and free stacks for misuse reports
 * (debug.c); MPKIT_MALLOC_WIPE=1 zeroes every block as it is freed
 * (MPK_HEAP_WIPE).  A misuse report names the call the program made (free(),
 * not mpk_heap_free) and starts at its frame.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <malloc.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpkit.h"
#include "malloc.h"
#include "../shared/trace.h"
#include "../shared/unwind.h"

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define EXPORT __attribute__((visibility("default")))
#define HEAP_ALIGN_MAX ((size_t)2 << 20) /* mpk_heap_aligned_alloc()'s limit */

static mpk_heap *heap;
/* The heap when a call needs nothing beside it (no MPKIT_MALLOC_STATS
 * count, no MPKIT_MALLOC_DEBUG stack): malloc() and free() test this
 * alone before they go to it; NULL sends them the long way. */
static mpk_heap *plain;
static int starting;
static bool fallback; /* no heap could be made: the internal allocator serves all */
/* The heap is made after the C library is up, from the first call once
 * the constructors run: before, a static program's start-up allocates
 * where mpk_init() could not yet unwind a stack (it primes the unwinder). */
static bool constructed;
static bool stats;
static int stats_fd = -1;
static uint64_t calls;
static bool debug;
static __thread unsigned inside __attribute__((tls_model("initial-exec")));
/* plain, for the calling thread while it is not inside mpkit; NULL
 * inside, and until the thread's first call past malloc()'s test, which
 * sets it: malloc() tests this one thread-local word where it tested
 * plain and inside. */
static __thread mpk_heap *t_plain __attribute__((tls_model("initial-exec")));

/* inside counted up and down.  The order of the stores is a signal
 * handler's view: a malloc() between the two, on the way in, still finds
 * the thread outside mpkit (it is, until the call made next); on the
 * way out it takes the long way, which sets t_plain as it leaves. */
static inline void inside_in(void)
{
	inside++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t_plain = NULL;
}

static inline void inside_out(void)
{
	if (!--inside) {
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t_plain = __atomic_load_n(&plain, __ATOMIC_ACQUIRE);
	}
}

/* The entry point the program called, for a misuse report. */
static __thread const char *entry __attribute__((tls_model("initial-exec")));

_Noreturn void mpk__malloc_die(const char *why)
{
	static const char pre[] = "libmpkit-malloc: ";

	(void)!write(2, pre, sizeof(pre) - 1);
	(void)!write(2, why, strlen(why));
	(void)!write(2, "\n", 1);
	abort();
}

static void boot_child(void)
{
	mpk__boot_unlock();
}

/* The heap's misuse handler: the report with the program's call in it,
 * from the program's frame, the block's stacks under --debug, then
 * abort() as the default handler would. */
static void misuse(const struct mpk_misuse *m, void *arg)
{
	static char buf[16384];
	static int busy;
	struct mpk_misuse named = *m;
	struct mpk__text t = { buf, sizeof(buf), 0 };
	void *frames[48];

	(void)arg;
	inside_in(); /* what the report allocates: the internal allocator's (it aborts) */
	while (__atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE))
		sched_yield(); /* another thread's report: it aborts the process */
	if (entry)
		named.call = entry;
	else if (m->heap && m->heap == __atomic_load_n(&heap, __ATOMIC_ACQUIRE) && m->call &&
		 !strcmp(m->call, "mpk_heap_free"))
		named.call = "free()"; /* free() sets no entry: one store less on its way */
	size_t n = mpk_misuse_format(&named, buf, sizeof(buf));
	t.len = n < sizeof(buf) ? n : sizeof(buf) - 1;
	mpk__trace_format(&t, frames, mpk__bt(frames, 48), 0, NULL);
	if (debug)
		mpk__dbg_describe(&t, m->addr);
	(void)mpk_report_write(buf, t.len);
	abort();
}

/* Make the heap, once; NULL while another call (maybe this thread's own,
 * from inside mpkit) is making it. */
static __attribute__((noinline)) mpk_heap *start(void)
{
	int no = 0;

	if (!__atomic_compare_exchange_n(&starting, &no, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return NULL;
	inside_in();
	/* The internal allocator's lock is taken last (mpkit allocates under
	 * its own locks), so its prepare handler, registered first, runs
	 * after the heap's. */
	if (pthread_atfork(mpk__boot_lock, mpk__boot_unlock, boot_child))
		mpk__malloc_die("pthread_atfork failed");
	/* Read here, with the heap: what the internal allocator frees before
	 * (ld.so's start-up) is not wiped. */
	const char *w = getenv("MPKIT_MALLOC_WIPE");
	mpk__boot_wipe = w && *w && strcmp(w, "0");
	mpk_domain *d = mpk_domain_create("malloc", MPK_RW, MPK_DOMAIN_SHARED);
	mpk_heap *h = d ? mpk_heap_create(d, mpk__boot_wipe ? MPK_HEAP_WIPE : 0) : NULL;
	if (!h) {
		/* A bad MPKIT_* variable, or MPKIT_BACKEND=hw without keys:
		 * the program still runs (mpkit run refuses to start it). */
		char msg[200];
		snprintf(msg, sizeof(msg),
			 "libmpkit-malloc: mpkit cannot make the heap (%s): the internal allocator serves "
			 "this program, unprotected\n",
#ifdef __GLIBC__
			 strerrorname_np(errno) ? strerrorname_np(errno) : "?"
#else
			 strerror(errno) /* musl's: a static table, no allocation */
#endif
			 );
		(void)!write(2, msg, strlen(msg));
		if (d)
			(void)mpk_domain_destroy(d);
		__atomic_store_n(&fallback, true, __ATOMIC_RELEASE);
		inside_out();
		return NULL;
	}
	const char *s = getenv("MPKIT_MALLOC_STATS");
	stats = s && *s && strcmp(s, "0");
	s = getenv("MPKIT_MALLOC_DEBUG");
	debug = s && *s && strcmp(s, "0") && !mpk__dbg_init();
	(void)mpk_misuse_handler_set(misuse, NULL);
	/* A stray access to the heap's memory, or past a block of its own
	 * into its guard page, gets a report rather than a bare SIGSEGV;
	 * other faults go to the default action, or to the handler the
	 * program installs later. */
	(void)mpk_fault_handler_install(NULL, NULL);
	/* A copy of stderr for the report at exit: coreutils (gnulib's
	 * close_stdout) close stderr before the destructors run. */
	if (stats)
		stats_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
	inside_out();
	__atomic_store_n(&heap, h, __ATOMIC_RELEASE);
	if (!stats && !debug)
		__atomic_store_n(&plain, h, __ATOMIC_RELEASE);
	return h;
}

/* The heap, or NULL: the internal allocator serves this call. */
static inline mpk_heap *use_heap(void)
{
	mpk_heap *h = __atomic_load_n(&heap, __ATOMIC_ACQUIRE);

	if (unlikely(inside))
		return NULL;
	if (unlikely(!h))
		return fallback || !__atomic_load_n(&constructed, __ATOMIC_ACQUIRE) ? NULL : start();
	if (unlikely(stats))
		__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
	return h;
}

/* The C library is up: make the heap now, before the program can call
 * mpkit itself.  A program that links libmpkit.so shares the drop-in's
 * mpkit, and mpk_init() allocates (the unwinder's set-up on musl) inside a
 * once-guard: were the program to start it, that allocation would come
 * here and wait on the guard its own thread holds.  From here, `inside`
 * sends it to the internal allocator. */
static __attribute__((constructor)) void libc_up(void)
{
	__atomic_store_n(&constructed, true, __ATOMIC_RELEASE);
	if (!__atomic_load_n(&heap, __ATOMIC_ACQUIRE) && !inside)
		(void)start();
}

static __attribute__((destructor)) void report(void)
{
	struct mpk_heap_stats st;
	mpk_heap *h = __atomic_load_n(&heap, __ATOMIC_ACQUIRE);

	if (!stats || !h || stats_fd < 0)
		return;
	inside_in();
	uint64_t n = __atomic_load_n(&calls, __ATOMIC_RELAXED);
	if (!mpk_heap_stats_get(h, &st)) {
		size_t opens = st.meta_opens ? st.meta_opens - 1 : 0; /* not this call's */
		dprintf(stats_fd,
			"libmpkit-malloc: %s[%d]: backend %s, metadata %s, %llu calls, %zu metadata opens, "
			"%.4f opens per call, %zu blocks live\n"
			"libmpkit-malloc: %s[%d]: bytes: %zu live at exit, %zu mapped at exit, %zu mapped at "
			"the peak\n",
			program_invocation_short_name, (int)getpid(), mpk_backend_name(mpk_backend()), st.meta_closed ? "closed" : "open",
			(unsigned long long)n, opens, n ? (double)opens / (double)n : 0.0, st.blocks,
			program_invocation_short_name, (int)getpid(), st.bytes, st.mapped, st.mapped_peak);
	}
	inside_out();
}

/* --debug: record p's allocation stack (the unwinder may allocate: the
 * internal allocator serves it). */
static __attribute__((noinline)) void traced_alloc(void *p)
{
	inside_in();
	mpk__dbg_alloc(p);
	inside_out();
}

static __attribute__((noinline)) void traced_free(void *p)
{
	inside_in();
	mpk__dbg_free(p);
	inside_out();
}

/* Every call below but malloc()'s and free()'s fast ones: the heap
 * through a use_heap() that said yes, with `inside` set, so that what
 * mpkit's calls into the C library allocate goes to the internal
 * allocator. */
#define IN_HEAP(expr) ({ inside_in(); __typeof__(expr) r_ = (expr); inside_out(); r_; })

/* malloc() and free() past their first test: no plain heap (none yet,
 * none to be had, stats or debug on), or a call from inside mpkit. */
static __attribute__((noinline)) void *malloc_long(size_t size)
{
	mpk_heap *h = use_heap();

	if (!h)
		return mpk__boot_alloc(size, 16);
	void *p = IN_HEAP(mpk_heap_malloc(h, size));
	if (unlikely(debug))
		traced_alloc(p);
	return p;
}

/* malloc() and free() call the heap without counting `inside` around
 * the call (a jump, no frame): the heap's fast path calls nothing, its
 * slow path allocates from the C library only where heap/cache.c's
 * bundle() takes the nested call itself, and the misuse handler counts
 * `inside` on its own.  malloc() still tests it, through t_plain: the
 * drop-in's own long paths (start(), the debug stacks, the report) send
 * theirs to the internal allocator with it. */
EXPORT void *malloc(size_t size)
{
	mpk_heap *h = t_plain;

	if (likely(h))
		return mpk_heap_malloc(h, size);
	return malloc_long(size);
}

static __attribute__((noinline)) void free_long(void *p)
{
	int err = errno;

	if (mpk__boot_owns(p)) {
		mpk__boot_free(p);
	} else {
		mpk_heap *h = __atomic_load_n(&heap, __ATOMIC_ACQUIRE);
		if (!h)
			mpk__malloc_die("free(): a pointer from no allocator");
		if (unlikely(debug))
			traced_free(p);
		(void)IN_HEAP(mpk_heap_free(h, p)); /* misuse: the handler reports and aborts */
	}
	errno = err;
}

/* A misuse report names free() without a store here: misuse() knows the
 * drop-in's heap and mpk_heap_free's name. */
EXPORT void free(void *p)
{
	mpk_heap *h = __atomic_load_n(&plain, __ATOMIC_ACQUIRE);

	if (!p)
		return;
	/* free() keeps errno (POSIX.1-2024, glibc 2.33): mpk_heap_free()
	 * does when it succeeds (its fast path touches none, so no save
	 * around every call); on misuse the handler reports and aborts. */
	if (likely(h) && likely(!mpk__boot_owns(p))) {
		(void)mpk_heap_free(h, p);
		return;
	}
	free_long(p);
}

EXPORT void *calloc(size_t n, size_t size)
{
	size_t len;

	if (__builtin_mul_overflow(n, size, &len)) {
		errno = ENOMEM;
		return NULL;
	}
	mpk_heap *h = use_heap();
	if (h) {
		void *p = IN_HEAP(mpk_heap_calloc(h, n, size));
		if (unlikely(debug))
			traced_alloc(p);
		return p;
	}
	void *p = mpk__boot_alloc(len, 16);
	if (p)
		memset(p, 0, len);
	return p;
}

EXPORT void *realloc(void *p, size_t size)
{
	if (!p)
		return malloc(size);
	if (!size) { /* glibc: frees, and returns NULL */
		free(p);
		return NULL;
	}
	if (!mpk__boot_owns(p)) {
		mpk_heap *h = __atomic_load_n(&heap, __ATOMIC_ACQUIRE);
		if (!h)
			mpk__malloc_die("realloc(): a pointer from no allocator");
		if (unlikely(debug))
			traced_free(p);
		entry = "realloc()";
		void *q = IN_HEAP(mpk_heap_realloc(h, p, size));
		entry = NULL;
		if (unlikely(debug))
			traced_alloc(q ? q : p); /* failed: p is still live */
		return q;
	}
	mpk_heap *h = use_heap();
	if (!h)
		return mpk__boot_realloc(p, size);
	/* A block from before the heap: it moves there. */
	void *q = IN_HEAP(mpk_heap_malloc(h, size));
	if (unlikely(debug))
		traced_alloc(q);
	if (q) {
		size_t have = mpk__boot_usable(p);
		memcpy(q, p, size < have ? size : have);
		mpk__boot_free(p);
	}
	return q;
}

EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
	size_t len;

	if (__builtin_mul_overflow(n, size, &len)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, len);
}

/* A block aligned to align (a power of two). */
static void *aligned(size_t align, size_t size)
{
	mpk_heap *h = use_heap();

	if (!h || align > HEAP_ALIGN_MAX)
		return mpk__boot_alloc(size, align);
	void *p = IN_HEAP(align <= 16 ? mpk_heap_malloc(h, size) : mpk_heap_aligned_alloc(h, align, size));
	if (unlikely(debug))
		traced_alloc(p);
	return p;
}

/* glibc's memalign(): a small alignment is malloc's, one that is not a
 * power of two is rounded up to one, one above SIZE_MAX / 2 + 1 is EINVAL. */
EXPORT void *memalign(size_t align, size_t size)
{
	if (align > SIZE_MAX / 2 + 1) {
		errno = EINVAL;
		return NULL;
	}
	if (align & (align - 1))
		align = (size_t)1 << (64 - __builtin_clzl(align));
	return aligned(align, size);
}

/* glibc 2.38 made aligned_alloc() refuse what is not a power of two;
 * before, it was memalign(). */
EXPORT void *aligned_alloc(size_t align, size_t size)
{
#if __GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 38)
	if (!align || (align & (align - 1))) {
		errno = EINVAL;
		return NULL;
	}
#endif
	return memalign(align, size);
}

EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	if (!align || align % sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	void *p = aligned(align, size);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

EXPORT void *valloc(size_t size)
{
	return memalign((size_t)sysconf(_SC_PAGESIZE), size);
}

#ifndef __GLIBC__
void *pvalloc(size_t size); /* glibc's, undeclared by musl */
#endif
EXPORT void *pvalloc(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len;

	if (__builtin_add_overflow(size, page - 1, &len)) {
		errno = ENOMEM;
		return NULL;
	}
	return memalign(page, len & ~(page - 1));
}

EXPORT size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	if (mpk__boot_owns(p))
		return mpk__boot_usable(p);
	mpk_heap *h = __atomic_load_n(&heap, __ATOMIC_ACQUIRE);
	if (!h)
		mpk__malloc_die("malloc_usable_size(): a pointer from no allocator");
	entry = "malloc_usable_size()";
	size_t n = IN_HEAP(mpk_heap_usable_size(h, p));
	entry = NULL;
	return n;
}
