/* SPDX-License-Identifier: MIT */
/*
 * libmpkit-watch.so, the LD_PRELOAD helper of `mpkit watch -- PROG ARGS`:
 * watches what MPKIT_WATCH names in a program that knows nothing of mpkit,
 * with the public API only, and reports each access with its instruction
 * and a backtrace.
 *
 *   MPKIT_WATCH=SPEC[,SPEC...]   SPEC: SYMBOL[:LEN] (a global the dynamic
 *                                symbol table lists: link with -rdynamic;
 *                                LEN defaults to its size) or ADDR+LEN,
 *                                either followed by /r to report reads too
 *   MPKIT_WATCH_OUT=FILE         reports go there (default stderr)
 *
 * A watch that cannot be set as asked ends the program before its main()
 * with WATCH_FAILED (mpkit watch's own failure, as env(1) counts): a
 * program run unwatched would look watched and report nothing.  The
 * helper then takes itself out of the environment, so that the programs
 * this one starts run as they would (they may not have the symbols).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpkit.h"
#include "dynsym.h"
#include "unwind.h"

#define SPECS 16
#define WATCH_FAILED 125 /* tools/mpkit.c */

struct spec {
	char name[64];
	void *addr;
	size_t len;
};

static struct spec specs[SPECS];
static int nspecs, out = STDERR_FILENO;
static unsigned long hits;

/* ---- async-signal-safe output ---- */

static void put(const char *s)
{
	if (write(out, s, strlen(s)) < 0)
		return;
}

static void put_hex(unsigned long v)
{
	char b[24], *p = b + sizeof(b);
	*--p = 0;
	do
		*--p = "0123456789abcdef"[v & 15];
	while (v >>= 4);
	put("0x");
	put(p);
}

static void put_dec(unsigned long v)
{
	char b[24], *p = b + sizeof(b);
	*--p = 0;
	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	put(p);
}

static void on_hit(const struct mpk_watch_hit *h, void *arg)
{
	const struct spec *s = arg;

	__atomic_add_fetch(&hits, 1, __ATOMIC_RELAXED);
	put("mpkit watch: ");
	put(h->write ? "write" : "read");
	put(" of ");
	put(s->name);
	put("+");
	put_dec(h->offset);
	put(" at ");
	put_hex((unsigned long)h->addr);
	put(" by thread ");
	put_dec((unsigned long)h->tid);
	put(", instruction ");
	put_hex((unsigned long)h->ip);
	put("\n");
	mpk__bt_names_fd(h->frames, h->nframes, out);
}

/* A watch cannot be set as asked: say so on stderr, and end here. */
static void fail(const char *what, const char *spec, const char *why)
{
	out = STDERR_FILENO;
	put("mpkit watch: ");
	put(what);
	put(spec);
	if (why) {
		put(" (");
		put(why);
		put(")");
	}
	put("; the program is not run\n");
	_exit(WATCH_FAILED);
}

/* One SPEC into specs[nspecs]; 0, or -1 for a bad SPEC. */
static int parse(char *spec, unsigned *flags)
{
	struct spec *s = &specs[nspecs];
	char *slash = strrchr(spec, '/'), *end;

	*flags = MPK_WATCH_WRITE;
	if (slash && !strcmp(slash, "/r")) {
		*flags |= MPK_WATCH_READ;
		*slash = 0;
	}
	char *plus = strchr(spec, '+'), *colon = strchr(spec, ':');
	if (plus) {
		*plus = 0;
		s->addr = (void *)strtoul(spec, &end, 0);
		if (*end || end == spec)
			return -1;
		s->len = strtoul(plus + 1, &end, 0);
		if (*end || end == plus + 1)
			return -1;
		strncpy(s->name, spec, sizeof(s->name) - 1);
		return 0;
	}
	if (colon) {
		*colon = 0;
		s->len = strtoul(colon + 1, &end, 0);
		if (*end || end == colon + 1)
			return -1;
	}
	if (!*spec)
		return -1;
	strncpy(s->name, spec, sizeof(s->name) - 1);
	return 0;
}

/* The symbol's address, and its size when no LEN was given. */
static void find(struct spec *s, const char *copy)
{
	s->addr = dlsym(RTLD_DEFAULT, s->name);
	if (!s->addr)
		fail("cannot find ", copy, "no such global in the program's dynamic symbol table");
	if (!s->len) {
		s->len = mpk__dynsym_size(s->addr);
		if (!s->len)
			fail("no size for ", copy, "give one: SYMBOL:LEN");
	}
}

/* The environment is read and changed through environ itself, in place
 * (main()'s envp is the same array): a program may interpose getenv()
 * and unsetenv(), and bash's own know nothing before bash's main(). */
extern char **environ;

static char **env_find(const char *name)
{
	size_t n = strlen(name);
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			return e;
	return NULL;
}

static const char *env_get(const char *name)
{
	char **e = env_find(name);
	return e ? *e + strlen(name) + 1 : NULL;
}

static void env_drop(const char *name)
{
	for (char **e; (e = env_find(name));)
		do
			e[0] = e[1];
		while (*e++);
}

/* This helper out of LD_PRELOAD (the same file, by device and inode), and
 * the orders out of the environment: the program's children run as they
 * would. */
static void leave_environment(void)
{
	char **pre, *save = NULL;
	Dl_info self;
	struct stat me, st;

	env_drop("MPKIT_WATCH");
	env_drop("MPKIT_WATCH_OUT");
	pre = env_find("LD_PRELOAD"); /* after the drops, which move entries */
	if (!pre || !dladdr((void *)leave_environment, &self) || stat(self.dli_fname, &me))
		return;
	char *copy = strdup(*pre + strlen("LD_PRELOAD=")), *keep = malloc(strlen(*pre) + 1);
	if (!copy || !keep) {
		free(copy);
		free(keep);
		return;
	}
	strcpy(keep, "LD_PRELOAD=");
	size_t empty = strlen(keep);
	for (char *t = strtok_r(copy, " :", &save); t; t = strtok_r(NULL, " :", &save)) {
		if (!stat(t, &st) && st.st_dev == me.st_dev && st.st_ino == me.st_ino)
			continue;
		if (strlen(keep) > empty)
			strcat(keep, " ");
		strcat(keep, t);
	}
	free(copy);
	if (strlen(keep) > empty) {
		*pre = keep; /* the process's for good, as putenv()'s strings are */
	} else {
		free(keep);
		env_drop("LD_PRELOAD");
	}
}

__attribute__((constructor)) static void start(void)
{
	const char *v = env_get("MPKIT_WATCH"), *o = env_get("MPKIT_WATCH_OUT");
	char buf[1024], *save = NULL;

	if (o && *o) {
		int fd = open(o, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd < 0)
			fail("cannot open MPKIT_WATCH_OUT=", o, strerror(errno));
		out = fd;
	}
	if (v && strlen(v) >= sizeof(buf))
		fail("MPKIT_WATCH is too long: ", v, "at most 1023 bytes");
	if (v)
		strcpy(buf, v);
	for (char *spec = v && *v ? strtok_r(buf, ",", &save) : NULL; spec; spec = strtok_r(NULL, ",", &save)) {
		char copy[256];
		unsigned flags;
		snprintf(copy, sizeof(copy), "%s", spec);
		if (nspecs == SPECS)
			fail("too many SPECs at ", copy, "at most 16");
		if (parse(spec, &flags))
			fail("bad SPEC ", copy, "SYMBOL[:LEN] or ADDR+LEN, then /r to report reads");
		struct spec *s = &specs[nspecs];
		if (!strchr(copy, '+'))
			find(s, copy);
		if (mpk_watch(s->addr, s->len, flags, on_hit, s) < 0)
			fail("cannot watch ", copy, strerror(errno));
		nspecs++;
		put("mpkit watch: watching ");
		put(copy);
		put(" at ");
		put_hex((unsigned long)s->addr);
		put(", ");
		put_dec(s->len);
		put(" bytes\n");
	}
	leave_environment();
}

__attribute__((destructor)) static void stop(void)
{
	if (!nspecs)
		return;
	put("mpkit watch: ");
	put_dec(__atomic_load_n(&hits, __ATOMIC_RELAXED));
	put(" accesses reported\n");
}
