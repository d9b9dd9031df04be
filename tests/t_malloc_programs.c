/* SPDX-License-Identifier: MIT */
/*
 * Real Debian programs with the drop-in allocator preloaded print what
 * they print under glibc: python3 (PYTHONMALLOC=malloc: every object
 * through malloc; dicts, json), sqlite3 (thousands of rows, an index, a
 * query), git (init, commit, log -p, gc, fsck in a temporary repository),
 * xz -T2 and zstd -T2 round trips, sort --parallel.  A program that is
 * missing is skipped, named (tools/deps.sh test installs them); the test
 * skips when all are.  Each script also checks that the drop-in was
 * loaded into the program (its maps).  MPKIT_MALLOC_STATS=1 reports from
 * sort, which closes stderr before the destructors run.
 */
#include "t_malloc.h"

struct prog {
	const char *name;
	const char *need; /* succeeds where the real program is there (not busybox's) */
	const char *script;
};

#define TMP "d=$(mktemp -d) && trap 'rm -rf \"$d\"' EXIT && cd \"$d\" && "
static const struct prog progs[] = {
	{ "python3", "python3 -c pass",
	  "PYTHONMALLOC=malloc python3 -c '\n"
	  "import json\n"
	  "d = {str(i): [i, str(i) * (i % 7), {\"k\": i}] for i in range(20000)}\n"
	  "s = json.dumps(d, sort_keys=True)\n"
	  "e = json.loads(s)\n"
	  "print(len(s), e == d, sum(len(v[1]) for v in e.values()))\n"
	  "print(any(\"libmpkit-malloc\" in l for l in open(\"/proc/self/maps\")))\n'" },
	{ "sqlite3", "sqlite3 -version",
	  TMP "sqlite3 db 'create table t(a integer, b text);"
	  "with recursive c(x) as (select 1 union all select x + 1 from c where x < 3000) "
	  "insert into t select x, printf(\"row %d %d\", x, x * x % 977) from c;"
	  "create index ti on t(b); select count(*), sum(a) from t where b like \"row 4%\";"
	  "select b from t where b > \"row 49\" order by b limit 5;'" },
	{ "git", "git --version",
	  TMP "git init -q r && cd r && git config user.email t@example.org && git config user.name t && "
	  "for i in 1 2 3 4 5; do seq $i 3000 > f$i && git add f$i && GIT_AUTHOR_DATE='2020-01-0'$i'T00:00:00Z' "
	  "GIT_COMMITTER_DATE='2020-01-0'$i'T00:00:00Z' git commit -q -m c$i; done && "
	  "git log -p | md5sum && git gc -q && git fsck --full 2>&1 && git count-objects -v | grep -v size" },
	{ "xz", "xz --version | grep -q 'XZ Utils'",
	  TMP "seq 1 100000 > in && xz -T2 -k -6 in && xz -T2 -dc in.xz | md5sum && md5sum < in" },
	{ "zstd", "zstd --version",
	  TMP "seq 1 100000 > in && zstd -q -T2 in -o in.zst && zstd -q -dc in.zst | md5sum && md5sum < in" },
	{ "sort", "sort --version | grep -q GNU",
	  "seq 1 100000 | awk '{ print ($1 * 7919) % 200003 }' | sort -n --parallel=2 -S 1M | md5sum" },
};

static char plain[65536], pre[65536], script[4096];

int main(void)
{
	int ran = 0;

	t_malloc_lib();
#ifndef __GLIBC__
	t_skip("the programs are Debian's, built for glibc: a drop-in built for another C library "
	       "cannot load into them");
#endif
	for (size_t i = 0; i < sizeof(progs) / sizeof(*progs); i++) {
		const struct prog *p = &progs[i];
		snprintf(script, sizeof(script), "(%s) >/dev/null 2>&1", p->need);
		if (t_malloc_sh(script, 0, NULL, plain, sizeof(plain))) {
			printf("%s: skipped, not installed (tools/deps.sh test installs it)\n", p->name);
			continue;
		}
		ran++;
		int a = t_malloc_sh(p->script, 0, NULL, plain, sizeof(plain));
		int b = t_malloc_sh(p->script, 1, NULL, pre, sizeof(pre));
		if (a || b) {
			t_fail("%s: exit %d under glibc, %d with the drop-in:\n%s\n---\n%s", p->name, a, b, plain, pre);
			continue;
		}
		/* python3 says whether the drop-in was in it. */
		if (!strcmp(p->name, "python3")) {
			size_t n = strcspn(plain, "\n");
			if (!strstr(pre, "\nTrue\n") || !strstr(plain, "\nFalse\n"))
				t_fail("python3: the drop-in was not loaded as asked:\n%s\n---\n%s", plain, pre);
			else if (strncmp(plain, pre, n + 1))
				t_fail("python3: output differs:\nglibc:\n%s\ndrop-in:\n%s", plain, pre);
			else
				printf("python3: same output (%.*s)\n", (int)n, plain);
			continue;
		}
		if (strcmp(plain, pre))
			t_fail("%s: output differs:\nglibc:\n%s\ndrop-in:\n%s", p->name, plain, pre);
		else
			printf("%s: same output\n", p->name);
	}
	/* The report at exit reaches stderr even from a program that closes
	 * stderr first, as coreutils do (gnulib's close_stdout). */
	if (!t_malloc_sh("sort --version | grep -q GNU", 0, NULL, plain, sizeof(plain))) {
		char *env[] = { "MPKIT_MALLOC_STATS=1", NULL };
		CHECK(t_malloc_sh("seq 1 1000 | sort -n 2>&1 >/dev/null", 1, env, pre, sizeof(pre)) == 0);
		CHECK(t_malloc_report("sort's stats", "sort", NULL, pre) >= 0);
	}
	if (!ran)
		t_skip("none of python3, sqlite3, git, xz, zstd, sort is installed (tools/deps.sh test)");
	return t_done();
}
