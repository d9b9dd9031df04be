/* SPDX-License-Identifier: MIT */
/*
 * Every --json of the mpkit command is JSON whatever the names in it:
 * copies of a program with a gadget (t_pit_wrpkru_inline) under hostile
 * names (a tab, a newline, a quote, a backslash, 0x01, bytes that are
 * not UTF-8, and valid UTF-8) scanned with `scan --json`; `info --json`
 * with such bytes in an MPKIT_* variable; `maps PID --all --json` of this
 * process with such a file mapped.  python3's json module reads each
 * (strict: a raw control character fails) and finds every name as
 * src/shared/json.h says: valid UTF-8 as it is, any other byte as the
 * code point of its value.
 */
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "t_cli.h"

static const char *const names[] = {
	"t_cli_json.tab\there", "t_cli_json.new\nline", "t_cli_json.q\"uote", "t_cli_json.back\\slash",
	"t_cli_json.ctl\x01\x1f\x7f", "t_cli_json.bad\xff\xfe\xc3(\xe2\x82", "t_cli_json.utf8-\xc3\xa9\xe2\x82\xac",
};
#define N (sizeof(names) / sizeof(names[0]))

/* Reads JSON from argv[1]; argv[2] says where the names are: "scan"
 * (every name in "scanned" and among the gadgets), "info" (argv[3] is
 * MPKIT_BACKEND's value), "maps" (argv[3] is a mapped file's path). */
static const char script[] =
	"import codecs, json, os, sys\n"
	"codecs.register_error('bytes', lambda e: (''.join(chr(b) for b in e.object[e.start:e.end]), e.end))\n"
	"want = lambda a: os.fsencode(a).decode('utf-8', 'bytes')\n"
	"with open(sys.argv[1], encoding='utf-8') as f:\n"
	"    d = json.load(f)\n"
	"kind, rest = sys.argv[2], [want(a) for a in sys.argv[3:]]\n"
	"if kind == 'scan':\n"
	"    got, gad = {m['where'] for m in d['scanned']}, {g['where'] for g in d['gadgets']}\n"
	"    bad = [n for n in rest if n not in got or n not in gad]\n"
	"elif kind == 'info':\n"
	"    bad = [] if d['environment']['MPKIT_BACKEND']['value'] == rest[0] else [d['environment']]\n"
	"else:\n"
	"    bad = [] if rest[0] in [m.get('path') for m in d['mappings']] else [d['mappings']]\n"
	"if bad:\n"
	"    print('not found as written:', ascii(bad))\n"
	"    sys.exit(1)\n";

/* python3 on the JSON in out, with args: its exit status. */
static int check_json(const char *what, const char *out, const char *const *args, int nargs)
{
	char *argv[N + 8] = { "python3", "t_cli_json.py", "t_cli_json.out" };
	FILE *f = fopen("t_cli_json.out", "w");

	REQUIRE(f && fputs(out, f) >= 0 && !fclose(f));
	for (int i = 0; i < nargs; i++)
		argv[3 + i] = (char *)args[i];
	pid_t pid = fork();
	if (pid == 0) {
		execvp("python3", argv);
		_exit(127);
	}
	int st;
	REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		t_fail("%s: python3 cannot read the JSON or finds no name (status %d):\n%s", what, st, out);
	return st;
}

static void copy(const char *from, const char *to)
{
	char buf[1 << 16];
	size_t n;
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");

	REQUIRE(in && out);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		REQUIRE(fwrite(buf, 1, n, out) == n);
	REQUIRE(!ferror(in) && !fclose(out));
	fclose(in);
}

int main(void)
{
	static struct t_cli r;
	const char *args[N + 4] = { "scan", "--json" };
	char pid[32];

	t_cli_prog();
	if (system("python3 -c 'import json' >/dev/null 2>&1"))
		t_skip("python3 is not installed (tools/deps.sh test)");
	if (access("t_pit_wrpkru_inline", R_OK))
		t_skip("t_pit_wrpkru_inline missing (make tests)");
	FILE *f = fopen("t_cli_json.py", "w");
	REQUIRE(f && fputs(script, f) >= 0 && !fclose(f));

	/* scan: every name, in the gadgets and in the list of what was read */
	for (size_t i = 0; i < N; i++) {
		copy("t_pit_wrpkru_inline", names[i]);
		args[2 + i] = names[i];
	}
	t_cli_run(&r, NULL, args);
	CHECK(r.status == 1); /* the gadget */
	check_json("scan --json", r.out, (const char *const[]){ "scan", names[0], names[1], names[2], names[3],
							      names[4], names[5], names[6] }, N + 1);

	/* info: a variable's value as it was given, bytes and all */
	const char *val = "hw\t\"\\\x01\xff\n";
	setenv("MPKIT_BACKEND", val, 1);
	t_cli_run(&r, NULL, (const char *[]){ "info", "--json", NULL });
	unsetenv("MPKIT_BACKEND");
	CHECK(r.status == 1); /* mpkit cannot start with it */
	check_json("info --json", r.out, (const char *const[]){ "info", val }, 2);

	/* maps: a file of a hostile name mapped here (the kernel writes a
	 * newline in a path as \012: the name without one) */
	char path[4096];
	int fd = open(names[5], O_RDONLY);
	REQUIRE(fd >= 0 && getcwd(path, sizeof(path)));
	void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	REQUIRE(p != MAP_FAILED);
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", names[5]);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	t_cli_run(&r, NULL, (const char *[]){ "maps", pid, "--all", "--json", NULL });
	CHECK(r.status == 0);
	check_json("maps --all --json", r.out, (const char *const[]){ "maps", path }, 2);
	munmap(p, 4096);
	close(fd);

	for (size_t i = 0; i < N; i++)
		unlink(names[i]);
	unlink("t_cli_json.py");
	unlink("t_cli_json.out");
	return t_done();
}
