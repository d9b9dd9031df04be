/* SPDX-License-Identifier: MIT */
/*
 * The gadget scan: every WRPKRU (0f 01 ef) and memory-form XRSTOR (0f ae /5,
 * mod != 3) byte sequence in executable code, at every offset, with the
 * symbol it falls in and its class:
 *   mpkit:  one of mpkit's checked sites (listed, with the whole check:
 *           the compared register set before, jne to the failure path);
 *   rop:    no path into it fixes the value it would load: PKRU changes to
 *           a value of the attacker's only if the attacker also sets EAX
 *           (XRSTOR: EAX's bit 9, and the XSAVE image in memory) before
 *           jumping there, the power that forges a sigreturn frame anyway;
 *   gadget: a path into it gives the value itself (a constant, memory at a
 *           fixed address, RDPKRU...): a jump, and a write to memory, is
 *           enough (scan_class.c says how paths are followed).
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
enum { MPK_SITE_MPKIT = 1, MPK_SITE_ROP = 2, MPK_SITE_GADGET = 3 };

struct mpk_gadget {
	int kind;             /* MPK_GADGET_* */
	int cls;              /* MPK_SITE_* */
	uint64_t addr;        /* run-time address (--pid), else ELF address */
	uint64_t file_off;    /* offset in the file or mapping */
	const char *where;    /* file or mapping name */
	const char *sym;      /* symbol it falls in, or NULL */
	uint64_t sym_off;     /* offset from the symbol */
	bool mpkit;           /* cls == MPK_SITE_MPKIT */
	/* MPK_SITE_GADGET: where a path that fixes the value starts (same
	 * address space as addr), or, unsure, the search gave up (too many
	 * paths) without finding one. */
	uint64_t from;
	bool unsure;
};

/* What a scan calls: gadget for each gadget (a non-zero return stops the
 * scan), mapping (optional) for each range scanned, with the bytes read. */
struct mpk_scan_cb {
	int (*gadget)(const struct mpk_gadget *g, void *arg);
	void (*mapping)(const char *where, uint64_t addr, uint64_t len, uint64_t nread, void *arg);
	void *arg;
};

const char *mpk__gadget_kind_name(int kind);
const char *mpk__site_class_name(int cls);
/* What an mpk__scan_file() errno means (EBADMSG, ENOTSUP: below). */
const char *mpk__scan_strerror(int err);

/* Whether the WRPKRU at b[site] (len bytes of code) is mpkit's whole
 * check: mov %eax, r32 (r not EAX) right before it, cmp r32, %eax and jne
 * right after, to mpkit's failure path (write, exit_group) in the code. */
bool mpk__gate_check_at(const uint8_t *b, size_t len, size_t site);

/* An executable range being classified (scan_class.c): its bytes; the
 * direct branches in it and the search's room, made on first use and freed
 * by mpk__scan_code_done(). */
struct mpk_code {
	const uint8_t *bytes;
	size_t len;
	uint64_t addr;  /* address of bytes[0] (absolute immediates are addresses) */
	struct mpk_edges *edges, *producers;
	bool edges_ready, edges_failed;
	void *queue, *seen, *room;
};
struct mpk_class {
	int cls;        /* MPK_SITE_ROP or MPK_SITE_GADGET */
	size_t from;    /* gadget: offset where a path that fixes the value starts */
	bool unsure;    /* gadget: the search ran out of room */
	size_t nodes;   /* states the search visited */
};
/* The class of the gadget of kind at off in c (not an mpkit site). */
void mpk__scan_class(struct mpk_code *c, size_t off, int kind, struct mpk_class *out);
void mpk__scan_code_done(struct mpk_code *c);

/* Length of the gadget starting at b[0] (3 for both kinds), or 0: b has at
 * least 3 readable bytes. */
int mpk__gadget_at(const uint8_t *b, int *kind);

/* Scan an ELF file (executable, shared object, relocatable object): the
 * pages the loader maps for its executable segments (segments whose pages
 * touch are one range), or SHF_EXECINSTR sections in an object.  Returns
 * the number of sites of class MPK_SITE_GADGET, or -1 with errno: EBADMSG
 * for an executable segment the file does not hold, ENOTSUP for text
 * relocations (the code that runs is not the file's). */
long mpk__scan_file(const char *path, const struct mpk_scan_cb *cb);

/* Scan every executable mapping of a process (pid 0: this one), vDSO
 * included, read through /proc/PID/mem; mappings that touch are one
 * range.  Returns as mpk__scan_file(). */
long mpk__scan_pid(pid_t pid, const struct mpk_scan_cb *cb);

#endif
