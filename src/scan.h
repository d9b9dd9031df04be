/* SPDX-License-Identifier: MIT */
/*
 * The gadget scan: every WRPKRU (0f 01 ef) and memory-form XRSTOR (0f ae /5,
 * mod != 3) byte sequence in executable code, at every offset, with the
 * symbol it falls in and whether it is one of mpkit's own checked sites.
 * Used by `mpkit scan` and by mpk_lockdown(MPK_LOCK_SCAN*).  libc only: the
 * ELF reading is done here, not with libelf.  Not installed.
 */
#ifndef MPK_SCAN_H
#define MPK_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum { MPK_GADGET_WRPKRU = 1, MPK_GADGET_XRSTOR = 2 };

struct mpk_gadget {
	int kind;             /* MPK_GADGET_* */
	uint64_t addr;        /* run-time address (--pid), else ELF address */
	uint64_t file_off;    /* offset in the file or mapping */
	const char *where;    /* file or mapping name */
	const char *sym;      /* symbol it falls in, or NULL */
	uint64_t sym_off;     /* offset from the symbol */
	bool mpkit;           /* one of mpkit's checked WRPKRU sites */
};

/* What a scan calls: gadget for each gadget (a non-zero return stops the
 * scan), mapping (optional) for each range scanned, with the bytes read. */
struct mpk_scan_cb {
	int (*gadget)(const struct mpk_gadget *g, void *arg);
	void (*mapping)(const char *where, uint64_t addr, uint64_t len, uint64_t nread, void *arg);
	void *arg;
};

const char *mpk__gadget_kind_name(int kind);

/* Length of the gadget starting at b[0] (3 for both kinds), or 0: b has at
 * least 3 readable bytes. */
int mpk__gadget_at(const uint8_t *b, int *kind);

/* Scan an ELF file (executable, shared object, relocatable object): its
 * executable segments (or SHF_EXECINSTR sections in an object).  Returns
 * the number of gadgets outside mpkit, or -1 with errno. */
long mpk__scan_file(const char *path, const struct mpk_scan_cb *cb);

/* Scan every executable mapping of a process (pid 0: this one), vDSO
 * included, read through /proc/PID/mem.  Returns as mpk__scan_file(). */
long mpk__scan_pid(pid_t pid, const struct mpk_scan_cb *cb);

#endif
