/* SPDX-License-Identifier: MIT */
/*
 * The program t_guard_heap runs under `mpkit guard --lib libguardheap`:
 * it knows nothing of mpkit.  With no argument it does what it may with
 * the library's heap blocks (read them, free and realloc them) and its
 * own (write them, hand them in, allocate in a callback, get them from
 * the library's allocator g_malloc), printing what
 * it saw; with an argument it does one forbidden thing: "write" stores
 * into a block the library handed out, "uaf" into the library's kept
 * block after the library freed it, "arith" past a returned block into
 * the block the library keeps beside it, "tail" into a block malloc()
 * returned straight to the gate, "inner" 0x13 bytes into a block of 21,
 * "past" 8 bytes into a block of 4 (past its end, in its slot), "big"
 * 0x20000 bytes into the library's kept block of 200000, "read"
 * reads one (for --deny all), "report" writes a library block three
 * times from one instruction and goes on (for --report), "free" frees
 * and reallocs library blocks without reading them (for --deny all),
 * "ctx" into the context g_new_ctx() made and the name in it, "buf" into
 * the buffer of g_new_buf(), "alloc" into a block of g_malloc() (those
 * three allowed or not by mpkit guard's out= and keep=).
 * Each forbidden mode prints "block ADDR" first, the block written (or
 * the one freed, the one arithmetic lands in) as the program has it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>

#include "guard_heap_lib.h"

static __attribute__((noinline)) void poke(volatile char *p, char v)
{
	*p = v;
}

/* Not a tail call of malloc(): that would return to the gate, and a
 * block asked for from there is the library's (docs/guard.md). */
static void *from_callback(size_t n)
{
	char *p = malloc(n);

	if (p)
		p[0] = 0;
	return p;
}

static int allowed(void)
{
	char *k = g_kept(64, 'L');
	printf("kept %c%c\n", k[0], k[63]);
	int once = g_touch();
	printf("touched %d %d\n", once, g_touch());
	k = g_grow(64, 8192, 'G');
	printf("grown %d %c %c\n", k[0], k[63], k[8191]);

	char *d = g_copy("hello");
	printf("dup %s, usable %d\n", d, malloc_usable_size(d) >= 6);
	free(d);
	d = g_copy("abc");
	d = realloc(d, 4096); /* the program's now: it may write it */
	strcpy(d + 3, "def");
	printf("realloc %s\n", d);
	free(d);
	printf("aligned %d %d\n", g_aligned(64), g_aligned(8192));

	char *mine = malloc(32);
	strcpy(mine, "mine");
	g_fill(mine + 4, 4, 'x');
	mine[8] = 0;
	printf("handed in %s\n", mine);
	free(mine);
	char *cb = g_call(from_callback, 16);
	strcpy(cb, "callback");
	printf("%s\n", cb);
	free(cb);
	char *own = g_malloc(16); /* an allocator's: the program's */
	strcpy(own, "allocator");
	printf("%s\n", own);
	free(own);
	void *t = g_block(100);
	printf("tail %d\n", t != NULL);
	free(t);
	g_drop();
	return 0;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";

	if (!*m)
		return allowed();
	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(m, "write")) {
		char *d = g_copy("abc");
		printf("block %p\n", (void *)d);
		printf("read %s\n", d);
		poke(d, 'X');
		printf("wrote %s\n", d);
	} else if (!strcmp(m, "uaf")) {
		char *k = g_kept(64, 'L');
		printf("block %p\n", (void *)k);
		g_drop();
		poke(k + 8, 'X');
		printf("wrote after free\n");
	} else if (!strcmp(m, "arith")) {
		char *d = g_copy("0123456789abcdef0123456789"), *k = g_kept(32, 'K');
		printf("block %p\n", (void *)k);
		printf("apart %d\n", (int)(k - d));
		poke(d + (k - d), 'X');
		printf("wrote by arithmetic %c\n", k[0]);
	} else if (!strcmp(m, "tail")) {
		char *t = g_block(100);
		printf("block %p\n", (void *)t);
		poke(t, 'X');
		printf("wrote tail\n");
	} else if (!strcmp(m, "inner") || !strcmp(m, "past")) {
		char *d = g_copy(m[0] == 'i' ? "0123456789abcdef0123" : "abc");
		printf("block %p\n", (void *)d);
		poke(d + (m[0] == 'i' ? 0x13 : 8), 'X');
		printf("wrote %s\n", m);
	} else if (!strcmp(m, "big")) {
		char *k = g_kept(200000, 'B');
		printf("block %p\n", (void *)k);
		poke(k + 0x20000, 'X');
		printf("wrote big\n");
	} else if (!strcmp(m, "read")) {
		char *d = g_copy("abc");
		printf("block %p\n", (void *)d);
		printf("read %s\n", d);
	} else if (!strcmp(m, "report")) {
		char *d = g_copy("abcdef");
		printf("block %p\n", (void *)d);
		g_kept(8, 'k');
		for (int i = 0; i < 3; i++)
			poke(d + 1 + i, (char)('x' + i));
		printf("report %s %d\n", d, g_touch());
		free(d);
	} else if (!strcmp(m, "ctx")) {
		struct g_ctx *c = g_new_ctx("ctx");
		printf("block %p\n", (void *)c);
		poke((char *)&c->n, 7);
		poke(c->name, 'C');
		printf("wrote ctx %s %d\n", c->name, c->n);
		free(c->name);
		free(c);
	} else if (!strcmp(m, "buf") || !strcmp(m, "alloc")) {
		char *b = m[0] == 'b' ? g_new_buf(8) : g_malloc(16);
		printf("block %p\n", (void *)b);
		poke(b, 'B');
		printf("wrote %s %c\n", m, b[0]);
		free(b);
	} else if (!strcmp(m, "free")) {
		char *d = g_copy("abc");
		free(d);
		d = realloc(g_copy("abcdef"), 100);
		printf("free %s\n", d);
		free(d);
	}
	return 0;
}
