/* SPDX-License-Identifier: MIT */
/*
 * Debian's programs, unmodified, with one of their libraries guarded by
 * `mpkit guard` print what they print unguarded, standard error and exit
 * status included: sqlite3 with libsqlite3 (20,000 rows, an index,
 * aggregates, an ordered query, an error), xmllint with libxml2
 * (--format, an XPath count, a document that is not well formed), git
 * with libz (commits, log -p, cat-file, gc, fsck in a temporary
 * repository), openssl with libcrypto (a digest, an AES round trip with
 * a fixed salt), python3 with libsqlite3 and libbz2, which its modules
 * sqlite3 and bz2 bring with dlopen() (a table of 20,000 rows; a
 * compression round trip), and two libraries at once (two --lib, each
 * in its own domain): git with libz and libpcre2 (git grep -P), python3
 * with libsqlite3 and libz (rows of compressed blobs).  Each guarded run must also say (MPKIT_GUARD_VERBOSE)
 * that it put each library's data in its domain; the helper's own lines
 * are taken out before comparing.  A program that is missing is skipped,
 * named (tools/deps.sh test installs them); the test skips when all are,
 * and with a C library other than glibc (the helper built for it cannot
 * load into Debian's programs).  Each runs again with --heap (the blocks
 * the library allocates in its domain too), enforcing: xmllint writes a
 * block its library's API hands it (the context of xmlXPathNewContext(),
 * docs/guard.md, "Heap blocks"), so libxml2 is named with
 * out=xmlXPathNewContext, which makes the blocks allocated under that
 * export xmllint's.
 */
#define _GNU_SOURCE /* memmem */
#include <limits.h>
#include <stdlib.h>

#include "t_cli.h"
#include "t_exec.h"

struct prog {
	const char *name, *lib;
	const char *need; /* succeeds where the program is there */
	const char *script; /* $G: nothing, or `mpkit guard --lib LIB --` */
	const char *heap;   /* the options of a second guarded run: --heap */
	const char *lib2;   /* a second library guarded with it, or NULL */
	const char *words;  /* lib's own words in the second run (",out=..."), or NULL */
};

#define TMP "d=$(mktemp -d) && trap 'rm -rf \"$d\"' EXIT && cd \"$d\" && "
static const struct prog progs[] = {
	{ "sqlite3", "libsqlite3", "sqlite3 -version",
	  "printf '%s\\n' 'create table t(a integer, b text);'"
	  " 'with recursive c(x) as (select 1 union all select x + 1 from c where x < 20000)"
	  " insert into t select x, printf(\"row %d %d\", x, x * x % 977) from c;'"
	  " 'create index ti on t(b);' 'select count(*), sum(a), avg(length(b)) from t where b like \"row 4%\";'"
	  " 'select * from nosuch;' 'select b, a from t where b > \"row 19\" order by b limit 5;'"
	  " | $G sqlite3 :memory:; echo \"exit $?\"", "--heap" },
	{ "xmllint", "libxml2", "xmllint --version",
	  TMP "{ echo '<r a=\"1\">'; seq 1 3000 | sed 's|.*|<i n=\"&\"><j>v&</j></i>|'; echo '</r>'; } > x.xml && "
	  "$G xmllint --format x.xml | md5sum && $G xmllint --xpath 'count(//j)' x.xml && echo && "
	  "echo '<a><b></a>' > bad.xml; $G xmllint bad.xml; echo \"exit $?\"", "--heap", NULL, ",out=xmlXPathNewContext" },
	{ "git", "libz", "git --version",
	  TMP "export GIT_CONFIG_NOSYSTEM=1 HOME=\"$d\" && $G git init -q r && cd r && "
	  "git config user.email t@example.org && git config user.name t && "
	  "for i in 1 2 3; do seq $i 5000 > f$i && $G git add f$i && GIT_AUTHOR_DATE=2020-01-0${i}T00:00:00Z "
	  "GIT_COMMITTER_DATE=2020-01-0${i}T00:00:00Z $G git commit -q -m c$i || exit 1; done && "
	  "$G git log -p | md5sum && $G git cat-file -p HEAD:f2 | md5sum && $G git gc -q && "
	  "$G git fsck --full 2>&1 && $G git log --format='%H %s'", "--heap" },
	{ "git (libz and libpcre2)", "libz", "git --version",
	  TMP "export GIT_CONFIG_NOSYSTEM=1 HOME=\"$d\" && git init -q r && cd r && "
	  "git config user.email t@example.org && git config user.name t && seq 1 20000 > f && "
	  "git add f && GIT_AUTHOR_DATE=2020-01-01T00:00:00Z GIT_COMMITTER_DATE=2020-01-01T00:00:00Z git commit -q -m c && "
	  "$G git grep -P -n \"^(\\d)\\d*\\1$\" | md5sum && $G git grep -P -c \"7{2,}\" && $G git log -p | md5sum",
	  "--heap", "libpcre2-8" },
	{ "python3 (sqlite3)", "libsqlite3", "python3 -c 'import sqlite3'",
	  "$G python3 -c '\n"
	  "import sqlite3\n"
	  "c = sqlite3.connect(\":memory:\")\n"
	  "c.execute(\"create table t(a, b)\")\n"
	  "c.executemany(\"insert into t values (?, ?)\", ((i, str(i) * 3) for i in range(20000)))\n"
	  "print(c.execute(\"select count(*), sum(a), max(b) from t\").fetchone())\n'", "--heap" },
	{ "python3 (bz2)", "libbz2", "python3 -c 'import bz2'",
	  "$G python3 -c '\n"
	  "import bz2, hashlib\n"
	  "d = b\"\".join(str(i).encode() for i in range(100000))\n"
	  "z = bz2.compress(d)\n"
	  "print(len(d), len(z), hashlib.sha256(z).hexdigest(), bz2.decompress(z) == d)\n'", "--heap" },
	{ "python3 (sqlite3 and zlib)", "libsqlite3", "python3 -c 'import sqlite3, zlib'",
	  "$G python3 -c '\n"
	  "import sqlite3, zlib\n"
	  "c = sqlite3.connect(\":memory:\")\n"
	  "c.execute(\"create table t(x)\")\n"
	  "c.executemany(\"insert into t values (?)\", ((zlib.compress(str(i).encode() * 50),) for i in range(2000)))\n"
	  "print(sum(len(zlib.decompress(r[0])) for r in c.execute(\"select x from t\")), zlib.crc32(b\"mpkit\"))\n'",
	  "--heap", "libz" },
	{ "openssl", "libcrypto", "openssl version",
	  TMP "seq 1 100000 > in && $G openssl dgst -sha256 in && "
	  "$G openssl enc -aes-256-cbc -pbkdf2 -pass pass:x -S 0102030405060708 -in in -out in.enc && "
	  "md5sum < in.enc && $G openssl enc -d -aes-256-cbc -pbkdf2 -pass pass:x -S 0102030405060708 -in in.enc | md5sum && "
	  "md5sum < in", "--heap" },
};

static char plain[1 << 16], guarded[1 << 16], kept[1 << 16];

/* /bin/sh -c script, $G set to guard (NULL: unset): status, output. */
static int run(const char *script, const char *guard, char *out, size_t cap)
{
	static char cwd[4096], helper[4200], g[4400];
	char *argv[] = { "sh", "-c", (char *)script, NULL };

	REQUIRE(getcwd(cwd, sizeof(cwd)));
	snprintf(helper, sizeof(helper), "MPKIT_GUARD_HELPER=%s/libmpkit-guard.so", cwd);
	if (guard)
		snprintf(g, sizeof(g), "G=%s", guard);
	char *env[] = { helper, "MPKIT_GUARD_VERBOSE=1", guard ? g : "G", NULL };
	return t_exec_capture("/bin/sh", argv, env, 1, out, cap);
}

/* A line of --report's backtraces: "file(+0xoff)[0xaddr]". */
static int frame_line(const char *l, size_t len)
{
	return len > 3 && l[len - 1] == '\n' && l[len - 2] == ']' && memmem(l, len, ")[0x", 4);
}

/* out without the helper's lines (printed when they are --report's
 * list); how many said the library was guarded (and lib2, if not NULL,
 * in *said2). */
static int strip(const char *out, const char *lib, const char *lib2, int *said2, char *to, size_t cap)
{
	char want[96], want2[96];
	int said = 0;
	size_t n = 0;

	snprintf(want, sizeof(want), "bytes of data in domain guard:%s.", lib);
	snprintf(want2, sizeof(want2), "bytes of data in domain guard:%s.", lib2 ? lib2 : lib);
	*said2 = 0;
	for (const char *l = out; *l;) {
		size_t len = strcspn(l, "\n") + (l[strcspn(l, "\n")] == '\n');
		if (!strncmp(l, "mpkit guard: ", 13)) {
			said += memmem(l, len, want, strlen(want)) != NULL;
			*said2 += memmem(l, len, want2, strlen(want2)) != NULL;
			if (memmem(l, len, " from outside into its data", 27) || !strncmp(l, "mpkit guard:   ", 15))
				printf("  %.*s", (int)len, l);
		} else if (!frame_line(l, len) && n + len < cap)
			memcpy(to + n, l, len), n += len;
		l += len;
	}
	to[n] = 0;
	return said;
}

int main(void)
{
	static char guard[4300], need[256], mpkit[PATH_MAX], libs[128], same[512], gone[512];
	int ran = 0, said2;

#ifndef __GLIBC__
	t_skip("the programs are Debian's, built for glibc: a helper built for another C library cannot load "
	       "into them");
#endif
	if (access("./libmpkit-guard.so", R_OK))
		t_skip("libmpkit-guard.so missing (make tests)");
	/* The scripts change directory: ../mpkit as an absolute path (on
	 * PATH it is found from anywhere). */
	const char *prog = t_cli_prog();
	if (strchr(prog, '/'))
		REQUIRE(realpath(prog, mpkit));
	else
		snprintf(mpkit, sizeof(mpkit), "%s", prog);
	for (size_t i = 0; i < sizeof(progs) / sizeof(*progs); i++) {
		const struct prog *p = &progs[i];
		snprintf(need, sizeof(need), "(%s) >/dev/null 2>&1", p->need);
		if (run(need, NULL, plain, sizeof(plain))) {
			printf("%s: skipped, not installed (tools/deps.sh test installs it)\n", p->name);
			snprintf(gone + strlen(gone), sizeof(gone) - strlen(gone), ", %s", p->name);
			continue;
		}
		ran++;
		int a = run(p->script, NULL, plain, sizeof(plain));
		/* Its data, then its heap blocks too. */
		for (int heap = 0; heap < 2; heap++) {
			snprintf(libs, sizeof(libs), "%s%s%s%s", p->lib, heap && p->words ? p->words : "",
				 p->lib2 ? " --lib " : "", p->lib2 ? p->lib2 : "");
			snprintf(guard, sizeof(guard), "%s guard %s --lib %s --", mpkit, heap ? p->heap : "", libs);
			int b = run(p->script, guard, guarded, sizeof(guarded));
			int said = strip(guarded, p->lib, p->lib2, &said2, kept, sizeof(kept));
			if (!said2)
				said = 0;
			if (!WIFEXITED(a) || WEXITSTATUS(a) || !WIFEXITED(b) || WEXITSTATUS(b))
				t_fail("%s: status %#x unguarded, %#x guarded:\n%s\n---\n%s", p->name, a, b, plain, guarded);
			else if (!said)
				t_fail("%s: the helper did not say it guarded %s:\n%s", p->name, libs, guarded);
			else if (strcmp(plain, kept))
				t_fail("%s: output differs:\nunguarded:\n%s\nguarded:\n%s", p->name, plain, guarded);
			else
				printf("%s%s%s: same output, %s guarded in %d run%s\n", p->name, heap ? " " : "",
				       heap ? p->heap : "", libs, said, said > 1 ? "s" : "");
		}
		snprintf(same + strlen(same), sizeof(same) - strlen(same), ", %s", p->name);
	}
	if (!ran)
		t_skip("none of sqlite3, xmllint, git, python3, openssl is installed (tools/deps.sh test)");
	/* The log's line: which ran, on which backend (the VM runs hw). */
	const char *be = getenv("MPKIT_BACKEND");
	printf("t_guard_real: backend %s: ran %s%s%s\n", be && *be ? be : "auto", same + 2,
	       *gone ? "; not installed: " : "", *gone ? gone + 2 : "");
	return t_done();
}
