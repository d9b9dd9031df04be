/* SPDX-License-Identifier: MIT */
/*
 * The registry: which address ranges belong to which domain, in a page
 * another process can read (through /proc/PID/mem), for `mpkit maps` on
 * kernels that do not name anonymous memory.  The layout is shared with
 * the mpkit tool (mpkit maps reads it) and versioned by its magic; the
 * library keeps it in src/core/registry.c.
 */
#ifndef MPK_REGISTRY_H
#define MPK_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#define MPK_REG_MAGIC "mpkit-registry-2"  /* 16 bytes, NUL included */
#define MPK_REG_SIZE (64u * 1024)         /* one mapping of exactly this size */
#define MPK_REG_NAME 64

/* One region, with the state its pages should have now (mpk_audit()'s
 * expectation, kept as keys move and soft rights change): `mpkit maps
 * --check` compares it with the process's smaps. */
struct mpk_reg_entry {
	uint64_t start, len;
	int32_t key;  /* the protection key its pages carry (0: none) */
	int32_t prot; /* PROT_* its pages have */
	char name[MPK_REG_NAME]; /* the domain's name */
};

struct mpk_reg_header {
	char magic[16];
	uint32_t seq;      /* odd while an update is under way */
	uint32_t count;    /* entries in use */
	uint32_t cap;      /* entries that fit */
	uint32_t dropped;  /* regions left out: the registry was full */
	/* A process may hold two mpkits (a program linked with libmpkit.a
	 * under the drop-in allocator's libmpkit.so): the lockdown of one
	 * trusts the other's system-call site (0: none given), and sets the
	 * other's locked, which sends its calls there (registry.c). */
	uint64_t syscall_ip;
	uint64_t locked;
	struct mpk_reg_entry entry[];
};

#endif
