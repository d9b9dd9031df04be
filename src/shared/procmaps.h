/* SPDX-License-Identifier: MIT */
/*
 * /proc/PID/maps and /proc/PID/smaps, one mapping at a time: the one
 * parser the library (src/core/os.c), the mpkit command (mpkit maps) and
 * the benchmarks share.  Plain C on libc, nothing of mpkit's.  It reads with
 * read(2) into the caller's buffer and never allocates: the library reads
 * its own maps where it may be the process's allocator.
 *
 *	struct mpk_procmaps pm;
 *	struct mpk_procmaps_vma v;
 *	if (mpk_procmaps_open(&pm, NULL, "ProtectionKey") == 0) {
 *		while (mpk_procmaps_next(&pm, &v) > 0)
 *			...v.lo, v.hi, v.perms, v.path, v.field...
 *		mpk_procmaps_close(&pm);
 *	}
 */
#ifndef MPK_SHARED_PROCMAPS_H
#define MPK_SHARED_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>

struct mpk_procmaps_vma {
	uint64_t lo, hi;     /* [lo, hi) */
	char perms[5];       /* "rw-p" */
	uint64_t offset;
	unsigned long inode;
	char path[256];      /* "" (anonymous), "[anon:NAME]", "[heap]", a file; cut at 255 */
	long long field;     /* smaps: the number after "FIELD:" (kB for sizes), -1 if absent */
};

/* The reader's state: the caller's, its members private. */
struct mpk_procmaps {
	int fd;
	const char *field;   /* NULL: maps */
	size_t flen;
	size_t pos, len;     /* unread bytes: buf[pos, len) */
	int eof, err, skip;  /* skip: the rest of a line longer than buf */
	int have_next;       /* smaps: next holds the mapping after the last one */
	struct mpk_procmaps_vma next;
	char buf[4096];
};

/* Opens /proc/PID/maps, or with a field (ProtectionKey, AnonHugePages,
 * Locked...) /proc/PID/smaps, whose mappings then carry that field's
 * value.  pid: "self", a number, or NULL for "self".  0, or -1/errno. */
int mpk_procmaps_open(struct mpk_procmaps *pm, const char *pid, const char *field);

/* The next mapping, in address order: 1, 0 at the end, -1/errno when the
 * file could not be read. */
int mpk_procmaps_next(struct mpk_procmaps *pm, struct mpk_procmaps_vma *v);

void mpk_procmaps_close(struct mpk_procmaps *pm);

#endif
