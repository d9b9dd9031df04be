/* SPDX-License-Identifier: MIT */
/*
 * MPKIT_MALLOC_WIPE=1 (mpkit run --wipe) makes the drop-in's free() zero
 * a block: malloc-calloc's "wipe" fills a block, frees it and reads it
 * back through the pointer it still holds, for a small block, a slab of
 * 5000 bytes, page runs of 40 and 120 KiB and a block of its own (200 KiB,
 * whose region the heap keeps mapped for the next one).  By default (the
 * variable unset, or 0) the bytes stay as written.  Soft, and hw where
 * the machine has keys; metadata as the backend's default.
 */
#include "t_malloc.h"

static char out[8192];

static void run(const char *backend, const char *wipe, unsigned size)
{
	char cmd[128], b[64], w[64];
	char *env[] = { b, w, NULL };

	snprintf(b, sizeof(b), "MPKIT_BACKEND=%s", backend);
	snprintf(w, sizeof(w), wipe ? "MPKIT_MALLOC_WIPE=%s" : "MPKIT_MALLOC_WIPE", wipe);
	snprintf(cmd, sizeof(cmd), "./malloc-calloc wipe %u", size);
	int st = t_malloc_sh(cmd, 1, env, out, sizeof(out));
	bool on = wipe && strcmp(wipe, "0");
	if (st || strncmp(out, on ? "wiped\n" : "kept ", on ? 6 : 5))
		t_fail("%s, MPKIT_MALLOC_WIPE=%s, %u bytes: exit %d:\n%s", backend, t_show(wipe), size, st,
		       out);
}

int main(void)
{
	static const unsigned sizes[] = { 24, 5000, 40 << 10, 120 << 10, 200 << 10 };
	static const char *const wipes[] = { NULL, "0", "1" };

	t_malloc_lib();
	if (access("./malloc-calloc", X_OK))
		t_skip("malloc-calloc is not beside the test (make tests)");
	for (int hw = 0; hw <= (t_backend() == MPK_BACKEND_HW); hw++)
		for (int w = 0; w < 3; w++)
			for (int s = 0; s < 5; s++)
				run(hw ? "hw" : "soft", wipes[w], sizes[s]);
	return t_done();
}
