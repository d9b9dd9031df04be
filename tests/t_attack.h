/* SPDX-License-Identifier: MIT */
/*
 * The heap-attack suite (t_attack_*): each test makes one attack on a
 * heap, as how2heap does on glibc's, and proves that mpkit detects and
 * reports it (the misuse report names the block, the call and a
 * backtrace) or makes it harmless (no block handed out afterwards lies
 * outside the heap's domain or overlaps another block).  Public API and
 * libc only.
 */
#ifndef MPK_TEST_ATTACK_H
#define MPK_TEST_ATTACK_H

#include "t_heap.h"

/* A range of memory that must stay apart from every new block. */
struct t_span {
	const void *p;
	size_t len;
};
/* qsort()'s order of spans by address. */
int t_span_by_addr(const void *a, const void *b);

/*
 * After an attack on h: allocate blocks of every kind (small sizes, page
 * runs, a region of its own) and check that each lies in h's domain,
 * overlaps neither another new block nor any of the nkeep spans in keep
 * (live blocks, a forged block, an attacker's target), then free them.
 * t_fail() for each bad block.
 */
void t_attack_sweep(mpk_heap *h, const struct t_span *keep, int nkeep);

/*
 * Run fn(arg) in a child with mpkit's default misuse action (report,
 * abort) and check the report on its stderr: the child died of SIGABRT
 * after "heap misuse: <what> <addr> in <call>" and a backtrace reaching
 * this test's binary.
 */
void t_attack_reported(void (*fn)(void *), void *arg, const char *what, const void *addr,
		       const char *call);

/*
 * Run attack(meta) with the heap metadata open, then sealed
 * (MPKIT_HEAP_META="open", "closed": read as the first heap is made, so
 * each run must destroy every heap it made), with misuse caught: the
 * attack expects none reported.  Then MPKIT_HEAP_META is unset again.
 */
void t_attack_both_modes(void (*attack)(const char *meta));

/* A data object of the program, placed. */
struct t_obj {
	uintptr_t at;
	size_t size;
};

/*
 * The heap layer's data objects as an attacker finds them in the test's
 * symbol table (it links libmpkit.a): the local objects of src/heap/'s
 * files and heap.h's globals by name.  Up to max into o; how many.
 * Skips the test when it has no symbol table.
 */
int t_attack_heap_objects(struct t_obj *o, int max);

/*
 * A heap-layer object by name (a local of its files, or one of heap.h's
 * globals), from the same symbol table: where it is
 * (a thread-local one, STT_TLS: in the calling thread, the executable's
 * TLS block below the thread pointer as glibc places it) and its size.
 * false when no such object is listed.
 */
bool t_attack_heap_symbol(const char *name, struct t_obj *o);
/* The same for a local object of another of the library's files (its
 * base name: "region.c"). */
bool t_attack_symbol(const char *file, const char *name, struct t_obj *o);

/* Copy n bytes where sanitizers do not look: a heap header, a freed
 * block (the attack reads or writes them on purpose). */
#if defined(__SANITIZE_ADDRESS__)
__attribute__((no_sanitize_address))
#endif
void t_attack_copy(void *to, const void *from, size_t n);

/*
 * The reader-writer attacker's tools: the heap's header scheme read from
 * its source (src/heap/heap.h: check = (key ^ p) + w * C1 + off, w the
 * size word, off the block's offset less the one its word's class gives,
 * hdr_off()), a bijection in key, so one header read gives the key, and
 * valid headers follow.  t_attack_hdr_key() reads a live block at its
 * class's offset (0 in the sum); t_attack_hdr_forge() writes a word of no
 * class, whose off is the block's offset in its slot: 16 for a small
 * block at its slot's start.
 */
uint64_t t_attack_hdr_key(const void *p);
void t_attack_hdr_forge(void *p, uint64_t size, uint64_t off, uint64_t key);

/*
 * Find a thread's cache entry as an attacker would: every private
 * read-write mapping of /proc/self/maps that is no domain's memory is
 * read for an entry's shape as the source has it (src/heap/heap.h, struct
 * tcache): the heap w0 at offset 0 (0: any), a small nonzero uid at 8, a small
 * epoch at 16, and w1 at off1.  The entry's address, or NULL.
 */
void *t_attack_find(uintptr_t w0, size_t off1, uintptr_t w1);

#endif
