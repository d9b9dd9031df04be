/* SPDX-License-Identifier: MIT */
/*
 * libmpkit-watch.so, the LD_PRELOAD helper of `mpkit watch -- PROG ARGS`:
 * watches what MPKIT_WATCH names in a program that knows nothing of mpkit,
 * with the public API only, and reports each access with its instruction
 * and a backtrace.
 *
 *   MPKIT_WATCH=SPEC[,SPEC...]   SPEC: SYMBOL[:LEN] (a global or static of
 *                                the program's .symtab or any .dynsym;
 *                                LEN defaults to its size) or ADDR+LEN,
 *                                either followed by /r to report reads too
 *                                (tools/watch_spec.h; mpkit watch -w/-r
 *                                set it)
 *   MPKIT_WATCH_OUT=FILE         reports go there (default stderr)
 *   MPKIT_WATCH_FD=N             mpkit watch -s: the ranges are written there,
 *                                "ADDR LEN NAME" a line (tools/watch_trace.c)
 *
 * Each report has the watched bytes before and after the access
 * (MPK_WATCH_VALUES: it comes once the instruction has run).
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

#include <elf.h>
#include <limits.h>
#include <link.h>

#include "mpkit.h"
#include "dynsym.h"
#include "elfsym.h"
#include "unwind.h"
#include "watch_spec.h"

#define SPECS 16
#define WATCH_FAILED 125 /* tools/mpkit.c */

struct spec {
	char name[WATCH_SPEC_NAME];
	void *addr;
	size_t len;
};

static struct spec specs[SPECS];
static int nspecs, out = STDERR_FILENO;
static unsigned long hits;

/* More static TLS than a page: musl's loader then maps the first thread's
 * TLS on its own instead of placing it in the free tail of an object's
 * last data page, beside the globals this helper is asked to watch
 * (mpk_watch() refuses a page holding it: EBUSY).  4 KiB a thread, in
 * watched programs only. */
__attribute__((used)) static __thread char tls_off_data_pages[4096];

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

/* A signed little-endian integer of 1, 2, 4 or 8 bytes. */
static void put_int(const uint8_t *b, size_t n)
{
	uint64_t u = 0;
	for (size_t i = n; i--;)
		u = u << 8 | b[i];
	if (n < 8 && (u >> (8 * n - 1)) & 1)
		u |= ~(uint64_t)0 << (8 * n); /* sign-extended */
	if ((int64_t)u < 0) {
		put("-");
		u = -u;
	}
	put_dec((unsigned long)u);
}

/* "  old: 4 (04 00 00 00 00 00 00 00)": the value as an integer when the
 * bytes are the whole of a variable of an integer's size. */
static void put_value(const char *label, const uint8_t *b, size_t n, bool whole)
{
	put("  ");
	put(label);
	put(": ");
	if (whole && (n == 1 || n == 2 || n == 4 || n == 8)) {
		put_int(b, n);
		put(" (");
	}
	for (size_t i = 0; i < n; i++) {
		char x[4] = { "0123456789abcdef"[b[i] >> 4], "0123456789abcdef"[b[i] & 15], ' ', 0 };
		if (i + 1 == n)
			x[2] = 0;
		put(x);
	}
	if (whole && (n == 1 || n == 2 || n == 4 || n == 8))
		put(")");
	put("\n");
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
	if (h->value_len) {
		bool whole = h->value_addr == s->addr && h->value_len == s->len;
		if (!whole) {
			put("  bytes ");
			put(s->name);
			put("+");
			put_dec((unsigned long)((uintptr_t)h->value_addr - (uintptr_t)s->addr));
			put(" to +");
			put_dec((unsigned long)((uintptr_t)h->value_addr - (uintptr_t)s->addr + h->value_len));
			put("\n");
		}
		if (h->write) {
			put_value("old", h->old_value, h->value_len, whole);
			put_value("new", h->new_value, h->value_len, whole);
		} else {
			put_value("value", h->old_value, h->value_len, whole);
		}
	}
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

/* The main program's load bias (its first object). */
static int first_object(struct dl_phdr_info *o, size_t size, void *arg)
{
	(void)size;
	*(uintptr_t *)arg = o->dlpi_addr;
	return 1;
}

struct lib_query {
	const char *name;
	struct elfsym sym;
	uintptr_t addr;
	int seen;
};

/* The libraries' own .symtab (rarely there: Debian strips them). */
static int in_library(struct dl_phdr_info *o, size_t size, void *arg)
{
	struct lib_query *q = arg;

	(void)size;
	if (q->seen++ == 0 || !o->dlpi_name || o->dlpi_name[0] != '/')
		return 0; /* the program itself, the vDSO */
	if (mpk__elfsym_find(o->dlpi_name, q->name, &q->sym) != ELFSYM_FOUND)
		return 0;
	q->addr = o->dlpi_addr + q->sym.value;
	return 1;
}

/* What the symbol is, refused if not a variable one can watch. */
static void check_type(int type, const char *copy)
{
	if (type == STT_FUNC || type == STT_GNU_IFUNC)
		fail("cannot watch ", copy, "a function, not a variable");
	if (type == STT_TLS)
		fail("cannot watch ", copy, "thread-local: each thread has its own; give ADDR+LEN");
}

/* The symbol's address, and its size when no LEN was given: the
 * program's .symtab (a program not linked with -rdynamic has its globals
 * there only), then every .dynsym (dlsym), then the libraries' .symtab. */
static void find(struct spec *s, const char *copy)
{
	static char why[WATCH_SPEC_NAME + PATH_MAX + 160];
	char prog[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", prog, sizeof(prog) - 1);
	struct elfsym sym;
	uintptr_t bias = 0;
	size_t size = 0;

	prog[n > 0 ? n : 0] = 0;
	dl_iterate_phdr(first_object, &bias);
	enum elfsym_result r = mpk__elfsym_find("/proc/self/exe", s->name, &sym);
	if (r == ELFSYM_AMBIGUOUS) {
		snprintf(why, sizeof(why), "%s has %d static variables of that name; give ADDR+LEN", prog,
			 sym.locals);
		fail("cannot watch ", copy, why);
	}
	if (r == ELFSYM_FOUND) {
		check_type(sym.type, copy);
		s->addr = (void *)(bias + sym.value);
		size = sym.size;
	} else if ((s->addr = dlsym(RTLD_DEFAULT, s->name))) {
		size = mpk__dynsym_size(s->addr);
	} else {
		struct lib_query q = { .name = s->name };
		dl_iterate_phdr(in_library, &q);
		if (!q.addr) {
			snprintf(why, sizeof(why), "no symbol of that name in %s's %s, nor in its libraries'",
				 prog, sym.has_symtab ? ".symtab or .dynsym" : ".dynsym (it is stripped: no .symtab)");
			fail("cannot find ", copy, why);
		}
		check_type(q.sym.type, copy);
		s->addr = (void *)q.addr;
		size = q.sym.size;
	}
	if (!s->len) {
		s->len = size;
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
	env_drop("MPKIT_WATCH_FD");
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

/* mpkit watch --syscalls (tools/watch_trace.c) is told the ranges, a
 * line "ADDR LEN NAME" each, through the pipe MPKIT_WATCH_FD names. */
static void tell_tracer(void)
{
	const char *v = env_get("MPKIT_WATCH_FD");
	char line[WATCH_SPEC_NAME + 48];
	char *end;

	if (!v)
		return;
	long fd = strtol(v, &end, 10);
	if (*end || fd < 3)
		return;
	for (int i = 0; i < nspecs; i++) {
		int n = snprintf(line, sizeof(line), "%lx %zx %s\n", (unsigned long)specs[i].addr, specs[i].len,
				 specs[i].name);
		if (write((int)fd, line, (size_t)n) != n)
			break;
	}
	close((int)fd);
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
		struct watch_spec ws;
		const char *why;
		snprintf(copy, sizeof(copy), "%s", spec);
		if (nspecs == SPECS)
			fail("too many SPECs at ", copy, "at most 16");
		if (watch_spec_parse(spec, &ws, &why))
			fail("bad SPEC ", copy, why);
		struct spec *s = &specs[nspecs];
		memcpy(s->name, ws.name, sizeof(s->name));
		s->addr = (void *)ws.addr;
		s->len = ws.len;
		if (!ws.by_addr)
			find(s, copy);
		unsigned flags = MPK_WATCH_WRITE | MPK_WATCH_VALUES | (ws.reads ? MPK_WATCH_READ : 0);
		if (mpk_watch(s->addr, s->len, flags, on_hit, s) < 0)
			fail("cannot watch ", copy,
			     errno == EBUSY ? "its page holds the thread's TLS or libc's thread data" : strerror(errno));
		nspecs++;
		put("mpkit watch: watching ");
		put(copy);
		put(" at ");
		put_hex((unsigned long)s->addr);
		put(", ");
		put_dec(s->len);
		put(" bytes\n");
	}
	tell_tracer();
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
