/* SPDX-License-Identifier: MIT */
/*
 * Backtraces on any C library (unwind.h): libgcc's unwinder, which steps
 * through signal frames as glibc's backtrace() does (it is the same
 * code: it knows the kernel's sigreturn trampoline, the same bytes in
 * glibc and musl).  The library links it statically (-static-libgcc): no
 * libgcc_s to load at start-up, as glibc's backtrace() would with
 * dlopen() (malloc, the loader's lock: never in a signal handler), and
 * its text stays out of memory in a process that never reports.  Names:
 * glibc's backtrace_symbols_fd(), elsewhere (musl) dladdr().
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "unwind.h"

/* Output without stdio, for signal context. */
void mpk__fd_put(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t k = write(fd, s, n);
		if (k <= 0)
			return;
		s += k;
		n -= (size_t)k;
	}
}

void mpk__fd_puts(int fd, const char *s)
{
	mpk__fd_put(fd, s, strlen(s));
}

void mpk__fd_hex(int fd, uintptr_t v)
{
	char b[2 + 2 * sizeof(v)], *p = b + sizeof(b);
	do
		*--p = "0123456789abcdef"[v & 15];
	while (v >>= 4);
	*--p = 'x';
	*--p = '0';
	mpk__fd_put(fd, p, (size_t)(b + sizeof(b) - p));
}

#include <link.h>
#include <unwind.h>

#ifndef __GLIBC__
/* Debian's libgcc unwinder (GCC 12, built on glibc 2.35) finds each
 * object's unwind tables with glibc's _dl_find_object(), which musl lacks:
 * the same answer from dl_iterate_phdr(), in glibc's x86-64 layout. */
struct mpk_dlfo {
	unsigned long long flags;
	void *map_start, *map_end, *link_map, *eh_frame;
	unsigned long long reserved[7];
};
__attribute__((visibility("hidden"))) int _dl_find_object(void *pc, struct mpk_dlfo *out);

static int dlfo_in(struct dl_phdr_info *o, size_t size, void *arg)
{
	struct mpk_dlfo *out = arg;
	uintptr_t pc = (uintptr_t)out->map_start, lo = UINTPTR_MAX, hi = 0;
	void *eh = NULL;
	bool inside = false;

	(void)size;
	for (int i = 0; i < o->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &o->dlpi_phdr[i];
		uintptr_t start = o->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD) {
			if (pc >= start && pc - start < ph->p_memsz)
				inside = true;
			lo = start < lo ? start : lo;
			hi = start + ph->p_memsz > hi ? start + ph->p_memsz : hi;
		} else if (ph->p_type == PT_GNU_EH_FRAME) {
			eh = (void *)start;
		}
	}
	if (!inside)
		return 0;
	memset(out, 0, sizeof(*out));
	out->map_start = (void *)lo;
	out->map_end = (void *)hi;
	out->eh_frame = eh;
	return 1;
}

int _dl_find_object(void *pc, struct mpk_dlfo *out)
{
	out->map_start = pc; /* the question, until an object answers */
	return dl_iterate_phdr(dlfo_in, out) == 1 ? 0 : -1;
}
#define dlfo_eh_frame eh_frame
#define dl_find_object mpk_dlfo
#endif

struct walk {
	void **frames;
	int max, n, skip;
};

static _Unwind_Reason_Code step(struct _Unwind_Context *c, void *arg)
{
	struct walk *w = arg;
	uintptr_t ip = _Unwind_GetIP(c);

	if (!ip)
		return _URC_END_OF_STACK;
	if (w->skip) { /* mpk__bt's own frame */
		w->skip--;
		return _URC_NO_REASON;
	}
	if (w->n == w->max)
		return _URC_END_OF_STACK;
	w->frames[w->n++] = (void *)ip;
	return _URC_NO_REASON;
}

/* libgcc aborts when the object it runs in has no unwind table index
 * (.eh_frame_hdr, which musl-gcc does not ask the linker for): then no
 * backtrace.  1 there, -1 not, 0 not known yet. */
static int indexed;

int mpk__bt(void **frames, int max)
{
	struct walk w = { .frames = frames, .max = max, .skip = 1 };
	int ix = __atomic_load_n(&indexed, __ATOMIC_RELAXED);

	if (!ix) {
		struct dl_find_object o;
		ix = !_dl_find_object((void *)mpk__bt, &o) && o.dlfo_eh_frame ? 1 : -1;
		__atomic_store_n(&indexed, ix, __ATOMIC_RELAXED);
	}
	if (max <= 0 || ix < 0)
		return 0;
	_Unwind_Backtrace(step, &w);
	return w.n;
}

#ifdef __GLIBC__
#include <execinfo.h>

void mpk__bt_names_fd(void *const *frames, int n, int fd)
{
	backtrace_symbols_fd(frames, n, fd);
}

void mpk__bt_prime(void)
{
	/* Nothing to load, nothing allocated on first use: the unwinder
	 * finds each object's tables with _dl_find_object(), which is
	 * async-signal-safe.  Its text is not touched until a report. */
}
#else
/* "file(sym+0xoff)[0xaddr]", "file(+0xoff)[0xaddr]" or "[0xaddr]", as
 * glibc prints them. */
void mpk__bt_names_fd(void *const *frames, int n, int fd)
{
	for (int i = 0; i < n; i++) {
		Dl_info info;
		uintptr_t a = (uintptr_t)frames[i];
		if (dladdr(frames[i], &info) && info.dli_fname) {
			mpk__fd_puts(fd, info.dli_fname);
			mpk__fd_puts(fd, "(");
			if (info.dli_sname && info.dli_saddr) {
				mpk__fd_puts(fd, info.dli_sname);
				mpk__fd_puts(fd, "+");
				mpk__fd_hex(fd, a - (uintptr_t)info.dli_saddr);
			} else {
				mpk__fd_puts(fd, "+");
				mpk__fd_hex(fd, a - (uintptr_t)info.dli_fbase);
			}
			mpk__fd_puts(fd, ")");
		}
		mpk__fd_puts(fd, "[");
		mpk__fd_hex(fd, a);
		mpk__fd_puts(fd, "]\n");
	}
}

void mpk__bt_prime(void)
{
	void *f[2];
	mpk__bt(f, 2); /* the unwinder finds and sorts its tables on first use */
}
#endif
