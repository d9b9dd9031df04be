/* SPDX-License-Identifier: MIT */
/* A dynamic symbol's size from its object's .dynsym (dynsym.h). */
#define _GNU_SOURCE
#include <link.h>
#include <stdbool.h>
#include <stdint.h>

#include "dynsym.h"

struct query {
	uintptr_t addr;
	size_t size;
};

/* A dynamic-section pointer: glibc relocates them, musl does not. */
static uintptr_t dyn_ptr(const struct dl_phdr_info *o, ElfW(Addr) p)
{
	return p < o->dlpi_addr ? p + o->dlpi_addr : p;
}

/* How many symbols .dynsym has: DT_HASH says it, DT_GNU_HASH's last
 * chain ends at it. */
static size_t dyn_count(const uint32_t *hash, const uint32_t *gnu)
{
	if (hash)
		return hash[1];
	if (!gnu)
		return 0;
	uint32_t nb = gnu[0], first = gnu[1], last = 0;
	const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(gnu + 4) + gnu[2]);
	const uint32_t *chain = buckets + nb;
	for (uint32_t b = 0; b < nb; b++)
		if (buckets[b] > last)
			last = buckets[b];
	if (last < first)
		return first;
	while (!(chain[last - first] & 1))
		last++;
	return last + 1;
}

static int in_object(struct dl_phdr_info *o, size_t size, void *arg)
{
	struct query *q = arg;
	const ElfW(Dyn) *dyn = NULL;
	bool inside = false;

	(void)size;
	for (int i = 0; i < o->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &o->dlpi_phdr[i];
		uintptr_t lo = o->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && q->addr >= lo && q->addr - lo < ph->p_memsz)
			inside = true;
		else if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(o->dlpi_addr + ph->p_vaddr);
	}
	if (!inside || !dyn)
		return inside;
	const ElfW(Sym) *syms = NULL;
	const uint32_t *hash = NULL, *gnu = NULL;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		uintptr_t p = dyn_ptr(o, dyn->d_un.d_ptr);
		if (dyn->d_tag == DT_SYMTAB)
			syms = (const ElfW(Sym) *)p;
		else if (dyn->d_tag == DT_HASH)
			hash = (const uint32_t *)p;
		else if (dyn->d_tag == DT_GNU_HASH)
			gnu = (const uint32_t *)p;
	}
	for (size_t i = 0, n = syms ? dyn_count(hash, gnu) : 0; i < n; i++)
		if (syms[i].st_shndx != SHN_UNDEF && syms[i].st_size &&
		    o->dlpi_addr + syms[i].st_value == q->addr) {
			q->size = syms[i].st_size;
			break;
		}
	return 1;
}

size_t mpk__dynsym_size(const void *addr)
{
	struct query q = { .addr = (uintptr_t)addr };

	dl_iterate_phdr(in_object, &q);
	return q.size;
}
