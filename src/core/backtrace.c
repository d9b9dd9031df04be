/* SPDX-License-Identifier: MIT */
/*
 * The backtrace of fault and misuse reports, async-signal-safe: the
 * frames as backtrace_symbols_fd() names them (function names where the
 * binary exports them), then each frame as module+offset from
 * /proc/self/maps, and per module the addr2line command that turns them
 * into functions and lines.  Only open/read/write and static buffers: no
 * malloc, no stdio, no locks.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "../shared/unwind.h"

#define MAX_FRAMES 32
#define PATH_LEN 256

struct frame {
	uintptr_t addr;
	uintptr_t off;   /* in the module's file */
	int module;      /* index into modules, -1 unknown */
};

static char modules[MAX_FRAMES][PATH_LEN];

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
static void match_line(const char *l, struct frame *fr, int n, int *nmod)
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
		return; /* anonymous, [vdso]: nothing for addr2line */
	for (int i = 0; i < n; i++) {
		if (fr[i].module >= 0 || fr[i].addr < lo || fr[i].addr >= hi)
			continue;
		int m = 0;
		while (m < *nmod && strcmp(modules[m], l))
			m++;
		if (m == *nmod) {
			size_t len = strlen(l);
			if (len >= PATH_LEN)
				continue;
			memcpy(modules[m], l, len + 1);
			(*nmod)++;
		}
		fr[i].module = m;
		fr[i].off = fr[i].addr - lo + off;
	}
}

static int locate(struct frame *fr, int n)
{
	static char buf[4096], line[PATH_LEN + 128];
	size_t len = 0;
	int nmod = 0, fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	for (ssize_t k; (k = read(fd, buf, sizeof(buf))) > 0;)
		for (ssize_t i = 0; i < k; i++) {
			if (buf[i] != '\n') {
				if (len < sizeof(line) - 1)
					line[len++] = buf[i];
				continue;
			}
			line[len] = 0;
			match_line(line, fr, n, &nmod);
			len = 0;
		}
	close(fd);
	return nmod;
}

static void print_located(int fd, void *const *addrs, int n);

void mpk__backtrace_print(int fd)
{
	/* The buffers are static (a signal stack may be small): one thread
	 * at a time; a second report at once gets the names only. */
	static int busy;
	void *addrs[MAX_FRAMES];
	int n = mpk__bt(addrs, MAX_FRAMES);

	mpk__fd_puts(fd, "mpkit:   backtrace:\n");
	mpk__bt_names_fd(addrs, n, fd);
	if (__atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE))
		return;
	print_located(fd, addrs, n);
	__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
}

static void print_located(int fd, void *const *addrs, int n)
{
	static struct frame fr[MAX_FRAMES];

	for (int i = 0; i < n; i++) {
		/* As given: return addresses (addr2line names the line of the
		 * call, or the next one), but the frame after the signal
		 * trampoline is the faulting instruction itself. */
		fr[i].addr = (uintptr_t)addrs[i];
		fr[i].module = -1;
	}
	int nmod = locate(fr, n);
	if (!nmod)
		return;
	mpk__fd_puts(fd, "mpkit:   frames as module+offset:\n");
	for (int i = 0; i < n; i++) {
		if (fr[i].module < 0)
			continue;
		mpk__fd_puts(fd, "mpkit:     ");
		mpk__fd_puts(fd, modules[fr[i].module]);
		mpk__fd_puts(fd, "+");
		mpk__fd_hex(fd, fr[i].off);
		mpk__fd_puts(fd, "\n");
	}
	mpk__fd_puts(fd, "mpkit:   for functions and lines (a binary with -g), run:\n");
	for (int m = 0; m < nmod; m++) {
		mpk__fd_puts(fd, "mpkit:     addr2line -f -i -C -e ");
		mpk__fd_puts(fd, modules[m]);
		for (int i = 0; i < n; i++)
			if (fr[i].module == m) {
				mpk__fd_puts(fd, " ");
				mpk__fd_hex(fd, fr[i].off);
			}
		mpk__fd_puts(fd, "\n");
	}
}
