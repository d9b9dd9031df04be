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
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpkit.h"

#define SPECS 16

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
	backtrace_symbols_fd(h->frames, h->nframes, out);
}

static void fail(const char *what, const char *spec)
{
	put("mpkit watch: ");
	put(what);
	put(": ");
	put(spec);
	if (errno) {
		put(" (");
		put(strerror(errno));
		put(")");
	}
	put("\n");
}

/* One SPEC into specs[nspecs]; 0 or -1. */
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
	errno = 0;
	if (plus) {
		*plus = 0;
		s->addr = (void *)strtoul(spec, &end, 0);
		if (*end)
			return -1;
		s->len = strtoul(plus + 1, &end, 0);
		if (*end)
			return -1;
		strncpy(s->name, spec, sizeof(s->name) - 1);
		return 0;
	}
	if (colon) {
		*colon = 0;
		s->len = strtoul(colon + 1, &end, 0);
		if (*end)
			return -1;
	}
	strncpy(s->name, spec, sizeof(s->name) - 1);
	s->addr = dlsym(RTLD_DEFAULT, spec);
	if (!s->addr)
		return -1;
	if (!colon) {
		Dl_info info;
		const ElfW(Sym) *sym = NULL;
		if (dladdr1(s->addr, &info, (void **)&sym, RTLD_DL_SYMENT) && sym)
			s->len = sym->st_size;
	}
	return s->len ? 0 : -1;
}

__attribute__((constructor)) static void start(void)
{
	const char *v = getenv("MPKIT_WATCH"), *o = getenv("MPKIT_WATCH_OUT");
	char buf[1024], *save = NULL;

	if (o && *o) {
		int fd = open(o, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd >= 0)
			out = fd;
	}
	if (!v || !*v)
		return;
	strncpy(buf, v, sizeof(buf) - 1);
	buf[sizeof(buf) - 1] = 0;
	for (char *spec = strtok_r(buf, ",", &save); spec && nspecs < SPECS;
	     spec = strtok_r(NULL, ",", &save)) {
		char copy[256];
		unsigned flags;
		strncpy(copy, spec, sizeof(copy) - 1);
		copy[sizeof(copy) - 1] = 0;
		if (parse(spec, &flags)) {
			fail("cannot find", copy);
			continue;
		}
		struct spec *s = &specs[nspecs];
		if (mpk_watch(s->addr, s->len, flags, on_hit, s) < 0) {
			fail("cannot watch", copy);
			continue;
		}
		nspecs++;
		put("mpkit watch: watching ");
		put(copy);
		put(" at ");
		put_hex((unsigned long)s->addr);
		put(", ");
		put_dec(s->len);
		put(" bytes\n");
	}
}

__attribute__((destructor)) static void stop(void)
{
	if (!nspecs)
		return;
	put("mpkit watch: ");
	put_dec(__atomic_load_n(&hits, __ATOMIC_RELAXED));
	put(" accesses reported\n");
}
