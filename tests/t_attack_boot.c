/* SPDX-License-Identifier: MIT */
/*
 * Attack: the drop-in's internal allocator (src/malloc/boot.c, which
 * serves alignments above 2 MiB), by an attacker who reads and writes
 * its blocks and the bytes before them: malloc-boot
 * (tests/helpers/malloc_boot.c) run with the drop-in preloaded, on each
 * backend with the metadata open and sealed.  The old internal allocator
 * trusted a {magic, class, offset} header before each block and kept its
 * free lists' links in the freed blocks: a double free with the header
 * written back handed one block out twice, a rewritten link made
 * aligned_alloc() return a block in the attacker's global, a rewritten
 * offset made free() write that global and the next block lie in it
 * (each reached its goal there: exit 3).  Now its bookkeeping is a sealed
 * table beside the blocks, and nothing in a block is read: each attack
 * is named ("double free in the internal allocator", abort) or changes
 * nothing (exit 0, or 4 when the forged header's place is not even
 * writable memory).
 */
#include "t_malloc.h"

static char out[8192];

static void attack(const char *backend, const char *meta, const char *what)
{
	char cmd[128], b[64], m[64];
	char *env[] = { b, m, NULL };

	snprintf(b, sizeof(b), "MPKIT_BACKEND=%s", backend);
	snprintf(m, sizeof(m), "MPKIT_HEAP_META=%s", meta);
	snprintf(cmd, sizeof(cmd), "./malloc-boot %s", what);
	int st = t_malloc_sh(cmd, 1, env, out, sizeof(out));
	bool named = st == 128 + SIGABRT && strstr(out, "in the internal allocator");
	if (!named && st != 0 && st != 4)
		t_fail("%s, metadata %s, %s: exit %d:\n%s", backend, meta, what, st, out);
	/* A double free is always caught: its header is no longer read. */
	if (!strcmp(what, "double-free") && !named)
		t_fail("%s, metadata %s: the double free was not named (exit %d):\n%s", backend, meta, st,
		       out);
	printf("%s, metadata %s, %s: %s\n", backend, meta, what,
	       named ? "named" : st == 4 ? "nothing to forge" : "harmless");
}

int main(void)
{
	static const char *const metas[] = { "open", "closed" };
	static const char *const attacks[] = { "double-free", "link", "offset" };

	t_malloc_lib();
	if (access("./malloc-boot", X_OK))
		t_skip("malloc-boot is not beside the test (make tests)");
	for (int hw = 0; hw <= (t_backend() == MPK_BACKEND_HW); hw++)
		for (int m = 0; m < 2; m++)
			for (int a = 0; a < 3; a++)
				attack(hw ? "hw" : "soft", metas[m], attacks[a]);
	return t_done();
}
