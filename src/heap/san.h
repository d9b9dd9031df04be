/* SPDX-License-Identifier: MIT */
/*
 * What AddressSanitizer and valgrind's memcheck see of heap blocks
 * (ordinary heaps): chunk and big-region memory is poisoned (no access)
 * until a block is handed out, a block's usable bytes are open while it is
 * live, and its header stays closed to everyone but the heap, so a write
 * one byte past a block is reported where it happens.  No-ops in other
 * builds: the ASan calls exist only under -fsanitize=address, and
 * valgrind's client requests are a few instructions that do nothing when
 * the program does not run under valgrind (valgrind/memcheck.h, header
 * only, used where it is installed).
 */
#ifndef MPK_HEAP_SAN_H
#define MPK_HEAP_SAN_H

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
#define VALGRIND_MAKE_MEM_NOACCESS(p, n) ((void)(p), (void)(n))
#define VALGRIND_MAKE_MEM_DEFINED(p, n) ((void)(p), (void)(n))
#define VALGRIND_MAKE_MEM_UNDEFINED(p, n) ((void)(p), (void)(n))
#define VALGRIND_MALLOCLIKE_BLOCK(p, n, rz, z) ((void)(p), (void)(n))
#define VALGRIND_FREELIKE_BLOCK(p, rz) ((void)(p))
#endif

/* Memory no block uses (fresh chunks and regions, freed blocks). */
static inline void mpk__san_poison(uintptr_t p, size_t n)
{
#if SAN_ASAN
	__asan_poison_memory_region((void *)p, n);
#endif
	VALGRIND_MAKE_MEM_NOACCESS(p, n);
}

/* Before memory goes back to the kernel, or moves (mremap). */
static inline void mpk__san_forget(uintptr_t p, size_t n)
{
#if SAN_ASAN
	__asan_unpoison_memory_region((void *)p, n);
#endif
	VALGRIND_MAKE_MEM_UNDEFINED(p, n);
}

/* A block handed out: its n usable bytes. */
static inline void mpk__san_alloc(uintptr_t p, size_t n)
{
#if SAN_ASAN
	__asan_unpoison_memory_region((void *)p, n);
#endif
	VALGRIND_MALLOCLIKE_BLOCK(p, n, 0, 0);
}

/* A block freed (into a cache or its arena). */
static inline void mpk__san_free(uintptr_t p, size_t n)
{
	VALGRIND_FREELIKE_BLOCK(p, 0);
	mpk__san_poison(p, n);
}

/* The heap's own reads and writes of a closed header. */
static inline void mpk__san_hdr_open(uintptr_t hd, size_t n)
{
	VALGRIND_MAKE_MEM_DEFINED(hd, n);
}

static inline void mpk__san_hdr_close(uintptr_t hd, size_t n)
{
	VALGRIND_MAKE_MEM_NOACCESS(hd, n);
}

#endif
