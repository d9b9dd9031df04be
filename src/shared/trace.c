/* SPDX-License-Identifier: MIT */
/*
 * Report backtraces (trace.h): each frame's module and file offset from
 * /proc/self/maps, its function from dladdr() where the object exports
 * one, mpkit's own frames left out.  Static buffers, one trace at a
 * time: a second one at once (another thread's report) gets addresses
 * only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "trace.h"

#define MAX_FRAMES 64
#define MAX_MODULES 16
#define PATH_LEN 256

void mpk__text_put(struct mpk__text *t, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++, t->len++)
		if (t->len + 1 < t->size)
			t->buf[t->len] = s[i];
	if (t->size)
		t->buf[t->len < t->size ? t->len : t->size - 1] = 0;
	if (t->len >= t->size && t->size)
		t->len = t->size - 1;
}

void mpk__text_str(struct mpk__text *t, const char *s)
{
	mpk__text_put(t, s, strlen(s));
}

static void text_num(struct mpk__text *t, unsigned long long v, unsigned base)
{
	char b[24], *p = b + sizeof(b);
	do
		*--p = "0123456789abcdef"[v % base];
	while (v /= base);
	mpk__text_put(t, p, (size_t)(b + sizeof(b) - p));
}

void mpk__text_hex(struct mpk__text *t, uintptr_t v)
{
	mpk__text_str(t, "0x");
	text_num(t, v, 16);
}

void mpk__text_dec(struct mpk__text *t, unsigned long long v)
{
	text_num(t, v, 10);
}

struct frame {
	uintptr_t addr, off; /* off: in the module's file */
	int module;          /* index into modules, -1 not known */
};

static char modules[MAX_MODULES][PATH_LEN];
static struct frame fr[MAX_FRAMES];

static const char *parse_hex(const char *s, uintptr_t *v)
{
	*v = 0;
	for (;; s++) {
		int d = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 : -1;
		if (d < 0)
			return s;
		*v = *v << 4 | (uintptr_t)d;
	}
}

/* One line of /proc/self/maps: "lo-hi perms offset dev inode   path". */
static void match_line(const char *l, int n, int *nmod)
{
	uintptr_t lo, hi, off;
	l = parse_hex(l, &lo);
	if (*l++ != '-')
		return;
	l = parse_hex(l, &hi);
	l = strchr(l, ' ');
	if (!l || !(l = strchr(l + 1, ' ')))
		return;
	l = parse_hex(l + 1, &off);
	for (int field = 0; field < 2 && l; field++) /* dev, inode */
		l = strchr(l + 1, ' ');
	if (!l)
		return;
	while (*l == ' ')
		l++;
	if (*l != '/')
		return; /* anonymous, [vdso]: no file to look in */
	for (int i = 0; i < n; i++) {
		if (fr[i].module >= 0 || fr[i].addr < lo || fr[i].addr >= hi)
			continue;
		int m = 0;
		while (m < *nmod && strcmp(modules[m], l))
			m++;
		if (m == *nmod) {
			size_t len = strlen(l);
			if (len >= PATH_LEN || m == MAX_MODULES)
				continue;
			memcpy(modules[m], l, len + 1);
			(*nmod)++;
		}
		fr[i].module = m;
		fr[i].off = fr[i].addr - lo + off;
	}
}

static void locate(int n)
{
	static char buf[4096], line[PATH_LEN + 128];
	size_t len = 0;
	int nmod = 0, fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	for (ssize_t k; (k = read(fd, buf, sizeof(buf))) > 0;)
		for (ssize_t i = 0; i < k; i++) {
			if (buf[i] != '\n') {
				if (len < sizeof(line) - 1)
					line[len++] = buf[i];
				continue;
			}
			line[len] = 0;
			match_line(line, n, &nmod);
			len = 0;
		}
	close(fd);
}

/* Whether module m is mpkit's: this code's own (unless it is the
 * program: then the program's frames could not be told from it), or a
 * libmpkit* object. */
static bool mpkit_module(int m, int self, const char *exe)
{
	const char *base = strrchr(modules[m], '/');

	if (base && !strncmp(base + 1, "libmpkit", 8))
		return true;
	return m == self && strcmp(modules[m], exe);
}

static void frame_line(struct mpk__text *t, int k, const struct frame *f, bool exact)
{
	Dl_info info;

	mpk__text_str(t, MPK_TRACE_PREFIX);
	mpk__text_dec(t, (unsigned)k);
	mpk__text_str(t, " ");
	mpk__text_hex(t, f->addr);
	/* A return address may be the first byte after its function. */
	if (dladdr((void *)(f->addr - !exact), &info) && info.dli_sname && info.dli_saddr) {
		mpk__text_str(t, " in ");
		mpk__text_str(t, info.dli_sname);
	}
	if (f->module >= 0) {
		mpk__text_str(t, " (");
		mpk__text_str(t, modules[f->module]);
		mpk__text_str(t, "+");
		mpk__text_hex(t, f->off);
		mpk__text_str(t, ")");
	}
	mpk__text_str(t, "\n");
}

void mpk__trace_format(struct mpk__text *t, void *const *addrs, int n, uintptr_t ip, const char *head)
{
	static int busy;
	static char exe[PATH_LEN];
	int first = 0;
	bool at_ip = false;

	if (n > MAX_FRAMES - 1)
		n = MAX_FRAMES - 1;
	if (__atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE)) {
		mpk__text_str(t, head ? head : MPK_TRACE_HEAD);
		mpk__text_str(t, ":\n");
		for (int i = 0; i < n; i++) {
			struct frame f = { (uintptr_t)addrs[i], 0, -1 };
			frame_line(t, i, &f, false);
		}
		return;
	}
	for (int i = 0; i < n; i++)
		fr[i] = (struct frame){ (uintptr_t)addrs[i], 0, -1 };
	fr[n] = (struct frame){ (uintptr_t)&mpk__trace_format, 0, -1 }; /* this code's module */
	locate(n + 1);
	ssize_t el = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[el > 0 ? el : 0] = 0;
	if (ip) {
		while (first < n && fr[first].addr != ip)
			first++;
		at_ip = first < n;
		if (!at_ip)
			first = 0; /* not found: all of it */
	} else {
		while (first < n && fr[first].module >= 0 && mpkit_module(fr[first].module, fr[n].module, exe))
			first++;
		if (first == n)
			first = 0; /* all mpkit's: a report from mpkit itself */
	}
	mpk__text_str(t, head ? head : at_ip ? MPK_TRACE_HEAD_FAULT : MPK_TRACE_HEAD);
	if (!ip && first) {
		mpk__text_str(t, " (");
		mpk__text_dec(t, (unsigned)first);
		mpk__text_str(t, first == 1 ? " frame" : " frames");
		mpk__text_str(t, " of mpkit left out)");
	}
	mpk__text_str(t, ":\n");
	for (int i = first; i < n; i++)
		frame_line(t, i - first, &fr[i], at_ip && i == first);
	__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
}
