/* SPDX-License-Identifier: MIT */
/*
 * What AddressSanitizer and valgrind's memcheck see of heap blocks
 * (ordinary heaps): chunk and big-region memory is poisoned (no access)
 * until a block is handed out, a block's usable bytes are open while it is
 * live, and its header stays closed to everyone but the heap, so a write
 * one byte past a block is reported where it happens.  No-ops in other
 * builds: the ASan calls exist only under -fsanitize=address, and
 * valgrind's client requests (valgrind/memcheck.h, header only, used where
 * it is installed) run only when the process runs under valgrind.
 */
#ifndef MPK_HEAP_SAN_H
#define MPK_HEAP_SAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define SAN_ASAN 1
#define SAN_NO_ASAN __attribute__((no_sanitize_address))
#else
#define SAN_ASAN 0
#define SAN_NO_ASAN
#endif

#if !defined(MPKIT_NO_VALGRIND) && defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define SAN_VG 1
#endif
#endif
#ifndef SAN_VG
#define SAN_VG 0
#endif

/* Under valgrind (asked once, with the first heap): the client requests
 * then run; otherwise a load and a branch stand for them. */
extern bool mpk__san_vg;
#if SAN_VG
#define SAN_VG_DO(req) do { if (__builtin_expect(mpk__san_vg, 0)) { req; } } while (0)
#define SAN_VG_PROBE() ((bool)RUNNING_ON_VALGRIND)
#else
#define SAN_VG_DO(req) do { } while (0)
#define SAN_VG_PROBE() false
#endif

/* Memory no block uses (fresh chunks and regions, freed blocks). */
static inline void mpk__san_poison(uintptr_t p, size_t n)
{
	(void)p;
	(void)n;
#if SAN_ASAN
	__asan_poison_memory_region((void *)p, n);
#endif
	SAN_VG_DO(VALGRIND_MAKE_MEM_NOACCESS(p, n));
}

/* Before memory goes back to the kernel, or moves (mremap). */
static inline void mpk__san_forget(uintptr_t p, size_t n)
{
	(void)p;
	(void)n;
#if SAN_ASAN
	__asan_unpoison_memory_region((void *)p, n);
#endif
	SAN_VG_DO(VALGRIND_MAKE_MEM_UNDEFINED(p, n));
}

/* A block handed out: its n usable bytes. */
static inline void mpk__san_alloc(uintptr_t p, size_t n)
{
	(void)p;
	(void)n;
#if SAN_ASAN
	__asan_unpoison_memory_region((void *)p, n);
#endif
	SAN_VG_DO(VALGRIND_MALLOCLIKE_BLOCK(p, n, 0, 0));
}

/* A block freed (into a cache or its arena). */
static inline void mpk__san_free(uintptr_t p, size_t n)
{
	(void)p;
	(void)n;
	SAN_VG_DO(VALGRIND_FREELIKE_BLOCK(p, 0));
	mpk__san_poison(p, n);
}

/* A block moved or grew (realloc): old gone, new of n bytes, the first
 * kept of them defined. */
static inline void mpk__san_move(uintptr_t old, uintptr_t p, size_t n, size_t kept)
{
	(void)old;
	(void)p;
	(void)n;
	(void)kept;
	SAN_VG_DO(VALGRIND_FREELIKE_BLOCK(old, 0));
	mpk__san_alloc(p, n);
	SAN_VG_DO(VALGRIND_MAKE_MEM_DEFINED(p, kept));
}

/* The heap's own reads and writes of a closed header. */
static inline void mpk__san_hdr_open(uintptr_t hd, size_t n)
{
	(void)hd;
	(void)n;
	SAN_VG_DO(VALGRIND_MAKE_MEM_DEFINED(hd, n));
}

static inline void mpk__san_hdr_close(uintptr_t hd, size_t n)
{
	(void)hd;
	(void)n;
	SAN_VG_DO(VALGRIND_MAKE_MEM_NOACCESS(hd, n));
}

#endif
