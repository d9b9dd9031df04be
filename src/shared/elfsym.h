/* SPDX-License-Identifier: MIT */
/*
 * A symbol by name from an ELF file's own tables, .symtab (what gdb and
 * valgrind read: every global and static of a program not stripped) then
 * .dynsym, read from the file, not from the loaded image (.symtab is never
 * loaded).  For `mpkit watch SYMBOL` on a program built without
 * -rdynamic.  Libc only; not in the library.  Not installed.
 */
#ifndef MPK_ELFSYM_H
#define MPK_ELFSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum elfsym_result {
	ELFSYM_FOUND,      /* *out filled */
	ELFSYM_NONE,       /* in neither table */
	ELFSYM_AMBIGUOUS,  /* several static (local) symbols of that name, no global */
	ELFSYM_UNREADABLE, /* not a 64-bit ELF file we could open and map (errno) */
};

struct elfsym {
	uint64_t value;  /* st_value: the link-time address (add the load bias) */
	uint64_t size;   /* st_size, 0 if the table gives none */
	int type;        /* STT_* */
	bool has_symtab; /* the file has a .symtab (set whatever the result) */
	int locals;      /* ELFSYM_AMBIGUOUS: how many static symbols */
};

/* Look name up in the ELF file path: a defined global or weak symbol of
 * .symtab or .dynsym first, else the one static (local) symbol of that name. */
enum elfsym_result mpk__elfsym_find(const char *path, const char *name, struct elfsym *out);

#endif
