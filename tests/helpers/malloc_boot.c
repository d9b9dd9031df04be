/* SPDX-License-Identifier: MIT */
/*
 * Attacks on the drop-in's internal allocator (src/malloc/boot.c), which
 * serves alignments above 2 MiB: run with the drop-in preloaded
 * (t_attack_boot).  The attacker reads and writes the blocks it was given
 * and the bytes before them, where the old layout kept a header
 * {magic, class, offset} that free() trusted and, in a freed block, the
 * free list's link.  argv[1]:
 *   double-free  free() a block, write its 16 header bytes back as they
 *                were, free() it again, then take two blocks
 *   link         free() a block and write a global's address into its
 *                first word (the old link), then take two blocks
 *   offset       rewrite a live block's offset so that the block it
 *                names is a global, free() it, then take a block
 * Exit 3 when the attack reached its goal (one block twice, a block in
 * the global, the global written), 4 when the attacker's own write
 * faulted (nothing there to forge), 0 when it changed nothing.  A
 * detected attack ends in the drop-in's abort.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ALIGN ((size_t)4 << 20) /* above the heap's 2 MiB: the internal allocator's */

static unsigned char global[3 * ALIGN] __attribute__((aligned(4096)));
static unsigned char copy[sizeof(global)];

static void *take(void)
{
	void *p = aligned_alloc(ALIGN, 100);

	if (!p) {
		fprintf(stderr, "aligned_alloc: NULL\n");
		exit(1);
	}
	if ((unsigned char *)p >= global && (unsigned char *)p < global + sizeof(global)) {
		fprintf(stderr, "attack reached: a block %p in the attacker's global\n", p);
		exit(3);
	}
	return p;
}

/* The attacker's pointer to memory it gave back (the compiler is not to
 * know: the use after free is the attack). */
static void *volatile hidden;
static void *hide(void *p)
{
	hidden = p;
	return hidden;
}

static void faulted(int sig)
{
	(void)sig;
	static const char msg[] = "the attacker's write faulted\n";
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(4);
}

/* Write n bytes at p as an attacker would (a fault: nothing to forge). */
static void poke(void *p, const void *v, size_t n)
{
	signal(SIGSEGV, faulted);
	memcpy(p, v, n);
	__asm__ volatile("" ::: "memory");
	signal(SIGSEGV, SIG_DFL);
}

static void peek(void *to, const void *p, size_t n)
{
	signal(SIGSEGV, faulted);
	memcpy(to, p, n);
	__asm__ volatile("" ::: "memory");
	signal(SIGSEGV, SIG_DFL);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	unsigned char hdr[16];
	uint64_t w[2];

	memset(global, 0, sizeof(global));
	memcpy(copy, global, sizeof(global));
	/* A block first, kept: the attacked one then has writable memory
	 * before it, not the allocator's read-only table, which the first
	 * block of its reserve follows when nothing else allocated there
	 * first. */
	(void)take();
	unsigned char *p = take();
	memset(p, 1, 100);
	if (!strcmp(what, "double-free")) {
		unsigned char *q = hide(p);
		peek(hdr, p - 16, 16);
		free(p);
		poke(q - 16, hdr, 16);
		free(q);
		void *a = take(), *b = take();
		if (a == b) {
			fprintf(stderr, "attack reached: one block %p handed out twice\n", a);
			return 3;
		}
	} else if (!strcmp(what, "link")) {
		/* The old block started 16 bytes and an offset before p. */
		peek(w, p - 16, 16);
		unsigned char *blk = hide(p - 16 - w[1]);
		uintptr_t to = (uintptr_t)global + ALIGN / 2;
		free(p);
		poke(blk, &to, sizeof(to));
		take();
		take();
	} else if (!strcmp(what, "offset")) {
		/* free() wrote the link at p - 16 - offset: make that the
		 * global, whose blocks then start ALIGN in. */
		peek(w, p - 16, 16);
		uintptr_t off = (uintptr_t)p - 16 - ((uintptr_t)global + ALIGN / 2);
		poke(p - 8, &off, sizeof(off));
		free(p);
		take();
	} else {
		fprintf(stderr, "usage: malloc-boot double-free|link|offset\n");
		return 2;
	}
	if (memcmp(global, copy, sizeof(global))) {
		fprintf(stderr, "attack reached: the allocator wrote the attacker's global\n");
		return 3;
	}
	return 0;
}
