/* SPDX-License-Identifier: MIT */
/*
 * What `mpkit watch` watches, as -w/-r and MPKIT_WATCH spell it:
 * SYMBOL[:LEN] or ADDR+LEN, then /r to report reads too.  One parser for
 * the command (which refuses a bad SPEC before PROG runs) and its
 * LD_PRELOAD helper (which sets the watches).
 */
#ifndef MPK_WATCH_SPEC_H
#define MPK_WATCH_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WATCH_SPEC_NAME 128

struct watch_spec {
	char name[WATCH_SPEC_NAME]; /* SYMBOL, or ADDR as written */
	uintptr_t addr;             /* ADDR+LEN */
	size_t len;                 /* 0: the symbol's size */
	bool by_addr;               /* ADDR+LEN */
	bool reads;                 /* /r */
};

/* One SPEC (no comma): 0, or -1 with *why saying what is wrong. */
int watch_spec_parse(const char *spec, struct watch_spec *out, const char **why);

/* The grammar, for messages. */
#define WATCH_SPEC_SYNTAX "SYMBOL[:LEN] or ADDR+LEN, then /r to report reads too"

#endif
