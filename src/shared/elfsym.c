/* SPDX-License-Identifier: MIT */
/* A symbol by name from an ELF file's .symtab and .dynsym (elfsym.h). */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfsym.h"

struct image {
	const uint8_t *b;
	size_t n;
};

/* The n-byte object at off, or NULL when the file is shorter. */
static const void *at(const struct image *im, uint64_t off, uint64_t n)
{
	return off <= im->n && n <= im->n - off ? im->b + off : NULL;
}

/* The string at off of a string table of size n, or NULL if it runs out. */
static const char *str_at(const struct image *im, const Elf64_Shdr *tab, uint32_t off)
{
	const char *s = at(im, tab->sh_offset, tab->sh_size);

	if (!s || off >= tab->sh_size || !memchr(s + off, 0, tab->sh_size - off))
		return NULL;
	return s + off;
}

/* Search one symbol table; globals go to *g, a static one to *l (counting
 * distinct statics in *locals). */
static void search(const struct image *im, const Elf64_Shdr *sh, const Elf64_Shdr *strtab,
		   const char *name, Elf64_Sym *g, Elf64_Sym *l, int *locals)
{
	const Elf64_Sym *syms = sh->sh_entsize == sizeof(Elf64_Sym) ? at(im, sh->sh_offset, sh->sh_size) : NULL;

	for (uint64_t i = 0; syms && i < sh->sh_size / sizeof(Elf64_Sym); i++) {
		const Elf64_Sym *s = &syms[i];
		if (s->st_shndx == SHN_UNDEF || !s->st_name)
			continue;
		const char *n = str_at(im, strtab, s->st_name);
		if (!n || strcmp(n, name))
			continue;
		int bind = ELF64_ST_BIND(s->st_info);
		if (bind == STB_GLOBAL || bind == STB_WEAK) {
			if (!g->st_name || (ELF64_ST_BIND(g->st_info) == STB_WEAK && bind == STB_GLOBAL))
				*g = *s;
		} else if (bind == STB_LOCAL && (!l->st_name || l->st_value != s->st_value)) {
			*l = *s;
			(*locals)++;
		}
	}
}

static enum elfsym_result find(const struct image *im, const char *name, struct elfsym *out)
{
	const Elf64_Ehdr *eh = at(im, 0, sizeof(*eh));

	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shentsize != sizeof(Elf64_Shdr)) {
		errno = ENOEXEC;
		return ELFSYM_UNREADABLE;
	}
	const Elf64_Shdr *sh = at(im, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr));
	if (!sh) {
		errno = ENOEXEC;
		return ELFSYM_UNREADABLE;
	}
	Elf64_Sym g = { 0 }, l = { 0 };
	int locals = 0;
	/* .symtab first: it holds what .dynsym does, and more. */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < eh->e_shnum; i++) {
			if (sh[i].sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB) || sh[i].sh_link >= eh->e_shnum)
				continue;
			out->has_symtab |= !pass;
			search(im, &sh[i], &sh[sh[i].sh_link], name, &g, &l, &locals);
		}
	const Elf64_Sym *s = g.st_name ? &g : locals == 1 ? &l : NULL;
	if (!s) {
		out->locals = locals;
		return locals ? ELFSYM_AMBIGUOUS : ELFSYM_NONE;
	}
	out->value = s->st_value;
	out->size = s->st_size;
	out->type = ELF64_ST_TYPE(s->st_info);
	return ELFSYM_FOUND;
}

enum elfsym_result mpk__elfsym_find(const char *path, const char *name, struct elfsym *out)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	memset(out, 0, sizeof(*out));
	if (fd < 0)
		return ELFSYM_UNREADABLE;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		errno = ENOEXEC;
		return ELFSYM_UNREADABLE;
	}
	struct image im = { .n = (size_t)st.st_size };
	void *m = mmap(NULL, im.n, PROT_READ, MAP_PRIVATE, fd, 0);
	int err = errno;
	close(fd);
	if (m == MAP_FAILED) {
		errno = err;
		return ELFSYM_UNREADABLE;
	}
	im.b = m;
	enum elfsym_result r = find(&im, name, out);
	err = errno;
	munmap(m, im.n);
	errno = err;
	return r;
}
