/* SPDX-License-Identifier: MIT */
/*
 * docs/malloc.md's table, the `mpkit run` column (issue 34, item 4): each
 * misuse of malloc-misuse (tests/helpers/malloc_misuse.c) under `mpkit
 * run` is reported as the table says (SIGABRT and the report's words), or
 * runs on as the table says it does ("not caught", exit 3).  A change in
 * either direction fails here: update the table with it.
 */
#include "t_cli.h"
#include "t_malloc.h"

static const struct {
	const char *mode, *report; /* report NULL: not caught */
} rows[] = {
	{ "double-free", "mpkit: heap misuse: double free of 0x" },
	{ "realloc-freed", "mpkit: heap misuse: double free of 0x" },
	{ "interior-free", "mpkit: heap misuse: wild pointer 0x" },
	{ "wild-free", "mpkit: heap misuse: wild pointer 0x" },
	{ "small-overflow", "mpkit: heap misuse: corrupted block header before 0x" },
	{ "big-overflow", "bytes past the end of region 0x" },
	{ "slack", NULL },
	{ "big-slack", NULL },
	{ "uaf-small", NULL },
	{ "uaf-big", NULL },
};

int main(void)
{
	static struct t_cli r;

	t_cli_prog();
	REQUIRE(setenv("MPKIT_MALLOC_LIB", t_malloc_lib(), 1) == 0);
	if (access("./malloc-misuse", X_OK))
		t_skip("malloc-misuse is not beside the test (make tests)");
	for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++) {
		const char *run[] = { "run", "--", "./malloc-misuse", rows[i].mode, NULL };
		t_cli_run(&r, NULL, run);
		if (rows[i].report && (r.status != 128 + SIGABRT || !strstr(r.err, rows[i].report)))
			t_fail("%s: exit %d, want a report \"%s\" and SIGABRT (docs/malloc.md):\n%s", rows[i].mode,
			       r.status, rows[i].report, r.err);
		if (!rows[i].report && (r.status != 3 || !strstr(r.err, "not caught")))
			t_fail("%s: exit %d: docs/malloc.md says it is not caught; update the table:\n%s",
			       rows[i].mode, r.status, r.err);
	}
	return t_done();
}
