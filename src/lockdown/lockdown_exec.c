/* SPDX-License-Identifier: MIT */
/*
 * The executable memory mpk_lockdown() leaves in place: after it no new
 * code may appear (docs/threat-model.md, "No new code after lockdown").
 * The filter denies PROT_EXEC, SHM_EXEC and READ_IMPLIES_EXEC; what is
 * already there is read from /proc/self/maps here, under mpkit's locks
 * (no malloc), outside domain memory (mpkit's code memory, whose writes
 * are its key's or mpkit's own):
 *  - READ_IMPLIES_EXEC set already, a writable and executable mapping, an
 *    executable mapping of a memfd, of System V shared memory or of a
 *    deleted file, a shared executable mapping of a file the process can
 *    write: refused (EBUSY), each named on stderr;
 *  - a private executable mapping of a file the process can write (a
 *    descriptor open for writing; unless MPK_LOCK_NO_OPEN, a file it may
 *    open for writing or owns): every page is copied out of the page
 *    cache (a write fault on each), so that a later write to the file no
 *    longer reaches the code; the filter keeps madvise() off these ranges
 *    (MADV_DONTNEED would drop the copy);
 *  - every executable range, for the filter to deny mremap() there: a
 *    growing mapping takes in the file's next pages, and a moved one
 *    leaves the ranges known.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lockdown.h"
#include "../shared/procmaps.h"

static void say(const char *why, const struct mpk_procmaps_vma *v)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "mpkit: lockdown: %s at 0x%llx-0x%llx (%s): refused\n", why,
			 (unsigned long long)v->lo, (unsigned long long)v->hi, v->path[0] ? v->path : "anonymous");
	if (n > 0)
		(void)!write(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

static bool in_domain(const struct mpk_procmaps_vma *v, const struct mpk_range *dom, size_t ndom)
{
	for (size_t i = 0; i < ndom; i++)
		if (v->lo < dom[i].hi && v->hi > dom[i].lo)
			return true;
	return false;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);
	return n >= t && !strcmp(s + n - t, tail);
}

/* A file with no name to check: its pages are written through a
 * descriptor, another mapping, or (System V) another attachment. */
static bool nameless(const char *path)
{
	return !strncmp(path, "/memfd:", 7) || !strncmp(path, "/SYSV", 5) || ends_with(path, " (deleted)");
}

struct fd_probe {
	unsigned long inode;
	bool found;
};

/* A descriptor open for writing on that inode. */
static bool fd_writes(int dirfd, const char *name, void *arg)
{
	struct fd_probe *p = arg;
	struct stat st;
	int fd = atoi(name), fl;

	if (fstatat(dirfd, name, &st, 0) || !S_ISREG(st.st_mode) || st.st_ino != p->inode)
		return false;
	fl = fcntl(fd, F_GETFL);
	p->found = fl >= 0 && (fl & O_ACCMODE) != O_RDONLY;
	return p->found;
}

/* Whether this process can change the file's bytes: a descriptor open for
 * writing, or (unless no file can be opened any more) write permission,
 * or ownership (chmod, then open).  A file renamed over since (another
 * inode at the path) counts as writable: it cannot be told. */
static bool file_writable(const struct mpk_procmaps_vma *v, unsigned flags)
{
	struct fd_probe p = { v->inode, false };
	struct stat st;

	if (mpk_os_dir_each("/proc/self/fd", fd_writes, &p) > 0 || p.found)
		return true;
	if (flags & MPK_LOCK_NO_OPEN)
		return false;
	if (!faccessat(AT_FDCWD, v->path, W_OK, AT_EACCESS))
		return true;
	return !stat(v->path, &st) && (st.st_ino != v->inode || st.st_uid == geteuid());
}

/* Each page's first byte stored back: a volatile store, which no compiler
 * drops (clang made a locked add of 0 a load), and kept from TSan, which
 * has no shadow for code pages. */
__attribute__((no_sanitize("thread"))) static void touch_pages(uintptr_t lo, uintptr_t hi, size_t page)
{
	for (uintptr_t a = lo; a < hi; a += page) {
		volatile unsigned char *b = (volatile unsigned char *)a;
		*b = *b;
	}
}

/* Every page of a private file mapping made an anonymous copy: a write
 * fault on each (its byte stored back), the protection back after.  A
 * whole page past the file's end cannot be copied (SIGBUS), and the file
 * growing would fill it: refused, as is a file whose size cannot
 * be known (another file at its path now). */
static int copy_out(const struct mpk_procmaps_vma *v)
{
	size_t page = mpk_os_page_size(), len = v->hi - v->lo;
	int prot = (v->perms[0] == 'r' ? PROT_READ : 0) | PROT_EXEC;
	struct stat st;

	if (stat(v->path, &st) || st.st_ino != v->inode) {
		say("executable memory of a file replaced since it was mapped", v);
		errno = EBUSY;
		return -1;
	}
	if ((uint64_t)st.st_size < v->offset + len - (page - 1)) {
		say("executable pages past the end of a file this process can write", v);
		errno = EBUSY;
		return -1;
	}
	if (mpk_os_mprotect((void *)v->lo, len, PROT_READ | PROT_WRITE | PROT_EXEC))
		return -1;
	touch_pages(v->lo, v->hi, page);
	return mpk_os_mprotect((void *)v->lo, len, prot);
}

/* Adds [lo, hi) to rs, merged with the last range if they touch. */
static int keep(struct mpk_range *r, size_t *n, size_t max, uint64_t lo, uint64_t hi)
{
	if (*n && r[*n - 1].hi == lo) {
		r[*n - 1].hi = hi;
		return 0;
	}
	if (*n == max) {
		errno = E2BIG;
		return -1;
	}
	r[(*n)++] = (struct mpk_range){ .lo = lo, .hi = hi };
	return 0;
}

/* One executable mapping: 0, or -1/errno (EBUSY: refused, said). */
static int one(struct mpk_exec_ranges *e, const struct mpk_procmaps_vma *v, unsigned flags)
{
	if (v->perms[1] == 'w') {
		say("a writable and executable mapping", v);
		errno = EBUSY;
		return -1;
	}
	if (keep(e->x, &e->nx, MPK_LOCK_MAX_EXEC, v->lo, v->hi))
		return -1;
	if (v->path[0] != '/')
		return 0; /* anonymous: written only after an mprotect that drops PROT_EXEC */
	if (nameless(v->path)) {
		say("executable memory of a memfd, shared memory or a deleted file", v);
		errno = EBUSY;
		return -1;
	}
	if (!file_writable(v, flags))
		return 0;
	if (v->perms[3] == 's') {
		say("a shared executable mapping of a file this process can write", v);
		errno = EBUSY;
		return -1;
	}
	if (copy_out(v))
		return -1;
	return keep(e->copied, &e->ncopied, MPK_LOCK_MAX_COPIED, v->lo, v->hi);
}

int mpk__exec_ranges(struct mpk_exec_ranges *e, const struct mpk_range *dom, size_t ndom, unsigned flags)
{
	struct mpk_procmaps pm;
	struct mpk_procmaps_vma v;
	int r, rc = 0;

	e->nx = e->ncopied = 0;
	if ((unsigned)personality(0xffffffff) & READ_IMPLIES_EXEC) {
		static const char line[] = "mpkit: lockdown: personality READ_IMPLIES_EXEC "
					   "(readable memory is executable): refused\n";
		(void)!write(2, line, sizeof(line) - 1);
		errno = EBUSY;
		return -1;
	}
	if (mpk_procmaps_open(&pm, NULL, NULL))
		return -1;
	while (!rc && (r = mpk_procmaps_next(&pm, &v)) > 0) {
		if (v.perms[2] != 'x' || in_domain(&v, dom, ndom) || !strcmp(v.path, "[vsyscall]"))
			continue;
		rc = one(e, &v, flags);
	}
	int err = errno;
	mpk_procmaps_close(&pm);
	if (!rc && r < 0)
		rc = -1;
	errno = err;
	return rc;
}
