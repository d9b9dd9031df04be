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
 * then run; otherwise a load and a branch stand for them.  The *_vg forms
 * take the answer as an argument: the heap's inline fast paths pass false
 * (under valgrind they are never taken, heap/cache.c), so they carry no
 * request and need no stack frame. */
extern bool mpk__san_vg;
#if SAN_VG
#define SAN_VG_IF(vg, req) do { if (__builtin_expect((vg), 0)) { req; } } while (0)
#define SAN_VG_PROBE() ((bool)RUNNING_ON_VALGRIND)
#else
#define SAN_VG_IF(vg, req) do { (void)(vg); } while (0)
#define SAN_VG_PROBE() false
#endif
#define SAN_VG_DO(req) SAN_VG_IF(mpk__san_vg, req)

/* Memory no block uses (fresh chunks and regions, freed blocks). */
static inline void mpk__san_poison_vg(uintptr_t p, size_t n, bool vg)
{
	(void)p;
	(void)n;
#if SAN_ASAN
	__asan_poison_memory_region((void *)p, n);
#endif
	SAN_VG_IF(vg, VALGRIND_MAKE_MEM_NOACCESS(p, n));
}

static inline void mpk__san_poison(uintptr_t p, size_t n)
{
	mpk__san_poison_vg(p, n, mpk__san_vg);
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
static inline void mpk__san_alloc_vg(uintptr_t p, size_t n, bool vg)
{
	(void)p;
	(void)n;
#if SAN_ASAN
	__asan_unpoison_memory_region((void *)p, n);
#endif
	SAN_VG_IF(vg, VALGRIND_MALLOCLIKE_BLOCK(p, n, 0, 0));
}

static inline void mpk__san_alloc(uintptr_t p, size_t n)
{
	mpk__san_alloc_vg(p, n, mpk__san_vg);
}

/* A block freed (into a cache or its arena). */
static inline void mpk__san_free_vg(uintptr_t p, size_t n, bool vg)
{
	(void)p;
	(void)n;
	SAN_VG_IF(vg, VALGRIND_FREELIKE_BLOCK(p, 0));
	mpk__san_poison_vg(p, n, vg);
}

static inline void mpk__san_free(uintptr_t p, size_t n)
{
	mpk__san_free_vg(p, n, mpk__san_vg);
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
static inline void mpk__san_hdr_open_vg(uintptr_t hd, size_t n, bool vg)
{
	(void)hd;
	(void)n;
	SAN_VG_IF(vg, VALGRIND_MAKE_MEM_DEFINED(hd, n));
}

static inline void mpk__san_hdr_close_vg(uintptr_t hd, size_t n, bool vg)
{
	(void)hd;
	(void)n;
	SAN_VG_IF(vg, VALGRIND_MAKE_MEM_NOACCESS(hd, n));
}

static inline void mpk__san_hdr_open(uintptr_t hd, size_t n)
{
	mpk__san_hdr_open_vg(hd, n, mpk__san_vg);
}

static inline void mpk__san_hdr_close(uintptr_t hd, size_t n)
{
	mpk__san_hdr_close_vg(hd, n, mpk__san_vg);
}

#endif
