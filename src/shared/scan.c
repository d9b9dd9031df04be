/* SPDX-License-Identifier: MIT */
/*
 * The gadget scan (see scan.h).  A gadget is a byte sequence, not an
 * instruction: a jump can land in the middle of an instruction or on bytes
 * that were meant as data, so every offset of executable memory is tried.
 * mpkit's own WRPKRU sites are listed by the arch layer in the section
 * mpk_wrpkru_sites (32-bit self-relative offsets, resolved at link time, so
 * they need no relocation); a gadget at one of them, followed by the check,
 * is mpkit's.  Every other one gets a class (scan_class.c).  Symbols come
 * from .symtab, else .dynsym, else, for a stripped file, the separate debug
 * file its build ID names (/usr/lib/debug/.build-id/, Debian's -dbgsym and
 * libc6-dbg packages).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scan.h"

#define SITES_SECTION "mpk_wrpkru_sites"
#define DEBUG_DIR "/usr/lib/debug/.build-id/"

const char *mpk__gadget_kind_name(int kind)
{
	return kind == MPK_GADGET_WRPKRU ? "wrpkru" : kind == MPK_GADGET_XRSTOR ? "xrstor" : "?";
}

const char *mpk__scan_strerror(int err)
{
	switch (err) {
	case ENOEXEC: return "not a 64-bit ELF file";
	case EBADMSG: return "executable code past the end of the file (the file is not what would run)";
	case ENOTSUP: return "text relocations: the loader would change the code (scan the process, --pid)";
	default: return strerror(err);
	}
}

const char *mpk__site_class_name(int cls)
{
	return cls == MPK_SITE_MPKIT ? "mpkit" : cls == MPK_SITE_ROP ? "rop" : "gadget";
}

/* mpkit's failure path (src/arch/x86/cpu.c, mpk_arch_wrpkru_fail): write(2,
 * msg, len), exit_group(134).  0x100: any byte. */
static const uint16_t fail_path[] = {
	0xb8, 1, 0, 0, 0, 0xbf, 2, 0, 0, 0, 0x48, 0x8d, 0x35, 0x100, 0x100, 0x100, 0x100,
	0xba, 0x100, 0x100, 0x100, 0x100, 0x0f, 0x05, 0xb8, 0xe7, 0, 0, 0, 0xbf, 0x86, 0, 0, 0, 0x0f, 0x05,
};

static bool fail_path_at(const uint8_t *b, size_t len, int64_t t)
{
	size_t n = sizeof(fail_path) / sizeof(fail_path[0]);
	if (t < 0 || (uint64_t)t > len || len - (size_t)t < n)
		return false;
	for (size_t k = 0; k < n; k++)
		if (fail_path[k] != 0x100 && b[t + (int64_t)k] != fail_path[k])
			return false;
	return true;
}

bool mpk__gate_check_at(const uint8_t *b, size_t len, size_t i)
{
	unsigned x;
	size_t j = i + 3;
	int64_t t;

	if (i > len || len - i < 3)
		return false;
	/* mov %eax, X: the value the gate meant (REX.B for r8d..r15d) */
	if (i >= 3 && b[i - 3] == 0x41 && b[i - 2] == 0x89 && (b[i - 1] & 0xf8) == 0xc0)
		x = 8u | (b[i - 1] & 7u);
	else if (i >= 2 && b[i - 2] == 0x89 && (b[i - 1] & 0xf8) == 0xc0 && (b[i - 1] & 7) != 0 &&
		 !(i >= 3 && (b[i - 3] & 0xf0) == 0x40))
		x = b[i - 1] & 7u;
	else
		return false;
	/* cmp X, %eax (REX.R for r8d..r15d), then jne to the failure path */
	if (x >= 8 && (j >= len || b[j++] != 0x44))
		return false;
	if (j + 2 > len || b[j] != 0x39 || b[j + 1] != (0xc0 | (x & 7) << 3))
		return false;
	j += 2;
	if (j + 6 <= len && b[j] == 0x0f && b[j + 1] == 0x85) {
		int32_t rel;
		memcpy(&rel, b + j + 2, 4);
		t = (int64_t)j + 6 + rel;
	} else if (j + 2 <= len && b[j] == 0x75) {
		t = (int64_t)j + 2 + (int8_t)b[j + 1];
	} else {
		return false;
	}
	return fail_path_at(b, len, t);
}

int mpk__gadget_at(const uint8_t *b, int *kind)
{
	if (b[0] != 0x0f)
		return 0;
	if (b[1] == 0x01 && b[2] == 0xef) {
		*kind = MPK_GADGET_WRPKRU;
		return 3;
	}
	/* 0f ae /5: ModRM reg field 5; mod 3 is LFENCE (e8..ef), not XRSTOR.
	 * Prefixes (REX.W for XRSTOR64) come before and do not matter. */
	if (b[1] == 0xae && ((b[2] >> 3) & 7) == 5 && (b[2] >> 6) != 3) {
		*kind = MPK_GADGET_XRSTOR;
		return 3;
	}
	return 0;
}

struct elf {
	const uint8_t *img;
	size_t size;
	const Elf64_Ehdr *eh;
	const Elf64_Phdr *ph;
	const Elf64_Shdr *sh;
	unsigned phnum, shnum;
	const Elf64_Sym *sym[2];
	size_t nsym[2];
	const char *str[2];
	size_t strsz[2];
	uint64_t sites_addr;
	const uint8_t *sites;
	size_t nsites;
	const uint8_t *build_id;
	size_t build_id_len;
	const struct elf *dbg; /* the separate debug file's symbols, or NULL */
};

static bool fits(const struct elf *e, uint64_t off, uint64_t len)
{
	return off <= e->size && len <= e->size - off;
}

/* NT_GNU_BUILD_ID in a note section: the name of the debug file. */
static void note_build_id(struct elf *e, const uint8_t *p, size_t len)
{
	while (len >= 12) {
		uint32_t nsz, dsz, type;
		memcpy(&nsz, p, 4);
		memcpy(&dsz, p + 4, 4);
		memcpy(&type, p + 8, 4);
		size_t n4 = ((size_t)nsz + 3) & ~(size_t)3, d4 = ((size_t)dsz + 3) & ~(size_t)3;
		if (n4 > len - 12 || d4 > len - 12 - n4)
			return;
		if (type == NT_GNU_BUILD_ID && nsz == 4 && !memcmp(p + 12, "GNU", 4) && dsz >= 2 &&
		    dsz <= 64) {
			e->build_id = p + 12 + n4;
			e->build_id_len = dsz;
			return;
		}
		p += 12 + n4 + d4;
		len -= 12 + n4 + d4;
	}
}

static int elf_parse(struct elf *e, const void *img, size_t size)
{
	memset(e, 0, sizeof(*e));
	e->img = img;
	e->size = size;
	e->eh = img;
	if (size < sizeof(Elf64_Ehdr) || memcmp(e->eh->e_ident, ELFMAG, SELFMAG) ||
	    e->eh->e_ident[EI_CLASS] != ELFCLASS64 || e->eh->e_ident[EI_DATA] != ELFDATA2LSB) {
		errno = ENOEXEC;
		return -1;
	}
	if (e->eh->e_phnum && e->eh->e_phentsize == sizeof(Elf64_Phdr) &&
	    fits(e, e->eh->e_phoff, (uint64_t)e->eh->e_phnum * sizeof(Elf64_Phdr))) {
		e->ph = (const void *)(e->img + e->eh->e_phoff);
		e->phnum = e->eh->e_phnum;
	}
	if (e->eh->e_shnum && e->eh->e_shentsize == sizeof(Elf64_Shdr) &&
	    fits(e, e->eh->e_shoff, (uint64_t)e->eh->e_shnum * sizeof(Elf64_Shdr))) {
		e->sh = (const void *)(e->img + e->eh->e_shoff);
		e->shnum = e->eh->e_shnum;
	}
	const Elf64_Shdr *shstr = e->eh->e_shstrndx < e->shnum ? &e->sh[e->eh->e_shstrndx] : NULL;
	for (unsigned i = 0; i < e->shnum; i++) {
		const Elf64_Shdr *s = &e->sh[i];
		if ((s->sh_type == SHT_SYMTAB || s->sh_type == SHT_DYNSYM) && s->sh_link < e->shnum &&
		    fits(e, s->sh_offset, s->sh_size) &&
		    fits(e, e->sh[s->sh_link].sh_offset, e->sh[s->sh_link].sh_size)) {
			int t = s->sh_type == SHT_DYNSYM;
			e->sym[t] = (const void *)(e->img + s->sh_offset);
			e->nsym[t] = s->sh_size / sizeof(Elf64_Sym);
			e->str[t] = (const char *)e->img + e->sh[s->sh_link].sh_offset;
			e->strsz[t] = e->sh[s->sh_link].sh_size;
		}
		if (s->sh_type == SHT_NOTE && fits(e, s->sh_offset, s->sh_size))
			note_build_id(e, e->img + s->sh_offset, s->sh_size);
		if (shstr && s->sh_type == SHT_PROGBITS && e->eh->e_type != ET_REL &&
		    s->sh_name < shstr->sh_size && fits(e, shstr->sh_offset, shstr->sh_size) &&
		    fits(e, s->sh_offset, s->sh_size) &&
		    !strncmp((const char *)e->img + shstr->sh_offset + s->sh_name, SITES_SECTION,
			     shstr->sh_size - s->sh_name)) {
			e->sites_addr = s->sh_addr;
			e->sites = e->img + s->sh_offset;
			e->nsites = s->sh_size / 4;
		}
	}
	return 0;
}

static bool elf_is_site(const struct elf *e, uint64_t addr)
{
	for (size_t i = 0; i < e->nsites; i++) {
		int32_t rel;
		memcpy(&rel, e->sites + 4 * i, 4);
		if (e->sites_addr + 4 * i + (int64_t)rel == addr)
			return true;
	}
	return false;
}

/* The symbol addr falls in: one whose [value, value + size) holds it, else
 * the nearest one below if it has no size (hand-written assembly).  Code
 * after a sized symbol is not named after it: in a stripped library that
 * is a local function whose name is gone (ld.so's _dl_runtime_resolve_*).
 * In an object file symbols are section-relative: shndx picks the section. */
static const char *elf_symbol(const struct elf *e, uint64_t addr, int shndx, uint64_t *off)
{
	const Elf64_Sym *best = NULL;
	const char *bname = NULL;
	bool inside = false;

	for (int t = 0; t < 2; t++)
		for (size_t i = 0; i < e->nsym[t]; i++) {
			const Elf64_Sym *s = &e->sym[t][i];
			int type = ELF64_ST_TYPE(s->st_info);
			if (s->st_shndx == SHN_UNDEF || s->st_shndx >= SHN_LORESERVE || s->st_name == 0 ||
			    s->st_name >= e->strsz[t] || type == STT_SECTION || type == STT_FILE ||
			    s->st_value > addr || (shndx >= 0 && s->st_shndx != shndx) ||
			    (s->st_shndx < e->shnum && !(e->sh[s->st_shndx].sh_flags & SHF_EXECINSTR)))
				continue; /* SHN_ABS: a version node (MPKIT_0.1), not code */
			bool in = addr - s->st_value < s->st_size;
			if ((in && !inside) || (in == inside && (!best || s->st_value > best->st_value))) {
				best = s;
				bname = e->str[t] + s->st_name;
				inside = in;
			}
		}
	if (!best || (!inside && best->st_size))
		return e->dbg && !e->nsym[0] ? elf_symbol(e->dbg, addr, shndx, off) : NULL;
	*off = addr - best->st_value;
	return bname;
}

/* Code scanned as one range (a jump, and an instruction, can cross from
 * one part to the next when they are adjacent in memory), in parts with
 * their own names, files and symbols. */
struct part {
	size_t start, len;  /* in the range's bytes */
	uint64_t eaddr;     /* ELF address of bytes[start] (symbols, sites) */
	uint64_t off;       /* file or mapping offset of bytes[start] */
	int shndx;          /* object files: the section, else -1 */
	const char *where;
	const struct elf *elf; /* or NULL */
};

struct range {
	const uint8_t *bytes;
	size_t len;
	uint64_t addr;   /* reported address of bytes[0] */
	const struct part *parts;
	size_t nparts;
};

static long scan_range(const struct range *r, const struct mpk_scan_cb *cb, int *stop)
{
	struct mpk_code code = { .bytes = r->bytes, .len = r->len, .addr = r->addr };
	const struct part *pt = r->parts;
	long gadgets = 0;

	for (size_t k = 0; cb->mapping && k < r->nparts; k++)
		cb->mapping(r->parts[k].where, r->addr + r->parts[k].start, r->parts[k].len, r->parts[k].len,
			    cb->arg);
	for (size_t i = 0; i + 3 <= r->len && !*stop; i++) {
		while (i >= pt->start + pt->len && pt + 1 < r->parts + r->nparts)
			pt++;
		struct mpk_gadget g = { .where = pt->where };
		if (!mpk__gadget_at(r->bytes + i, &g.kind))
			continue;
		g.addr = r->addr + i;
		g.file_off = pt->off + (i - pt->start);
		if (pt->elf) {
			uint64_t ea = pt->eaddr + (i - pt->start);
			g.sym = elf_symbol(pt->elf, ea, pt->shndx, &g.sym_off);
			g.mpkit = g.kind == MPK_GADGET_WRPKRU && elf_is_site(pt->elf, ea) &&
				  mpk__gate_check_at(r->bytes, r->len, i);
		}
		if (g.mpkit) {
			g.cls = MPK_SITE_MPKIT;
		} else {
			struct mpk_class c;
			mpk__scan_class(&code, i, g.kind, &c);
			g.cls = c.cls;
			g.from = r->addr + c.from;
			g.unsure = c.unsure;
		}
		if (g.cls == MPK_SITE_GADGET)
			gadgets++;
		if (cb->gadget && cb->gadget(&g, cb->arg))
			*stop = 1;
	}
	mpk__scan_code_done(&code);
	return gadgets;
}

struct mapped {
	void *p;
	size_t size;
};

static int map_file(const char *path, struct mapped *m)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size == 0) {
		close(fd);
		errno = ENOEXEC;
		return -1;
	}
	m->size = (size_t)st.st_size;
	m->p = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m->p == MAP_FAILED) {
		m->p = NULL;
		return -1;
	}
	return 0;
}

/* An ELF file mapped and parsed, with its separate debug file when it is
 * stripped and one is installed. */
struct elf_file {
	struct mapped m, dm;
	struct elf e, de;
};

static void elf_close(struct elf_file *f)
{
	if (f->m.p)
		munmap(f->m.p, f->m.size);
	if (f->dm.p)
		munmap(f->dm.p, f->dm.size);
	f->m.p = f->dm.p = NULL;
}

static int elf_open(const char *path, struct elf_file *f)
{
	char dbg[sizeof(DEBUG_DIR) + 2 * 64 + 8];

	memset(f, 0, sizeof(*f));
	if (map_file(path, &f->m))
		return -1;
	if (elf_parse(&f->e, f->m.p, f->m.size)) {
		int err = errno;
		elf_close(f);
		errno = err;
		return -1;
	}
	if (f->e.nsym[0] || !f->e.build_id)
		return 0;
	size_t n = (size_t)snprintf(dbg, sizeof(dbg), "%s", DEBUG_DIR);
	for (size_t i = 0; i < f->e.build_id_len; i++)
		n += (size_t)snprintf(dbg + n, sizeof(dbg) - n, i == 1 ? "/%02x" : "%02x", f->e.build_id[i]);
	snprintf(dbg + n, sizeof(dbg) - n, ".debug");
	if (!map_file(dbg, &f->dm) && !elf_parse(&f->de, f->dm.p, f->dm.size) && f->de.nsym[0])
		f->e.dbg = &f->de;
	return 0;
}

#define PAGE 4096ull

/* The file offset of ELF address v, from the segments (its file bytes). */
static bool elf_off_of_vaddr(const struct elf *e, uint64_t v, uint64_t *off)
{
	for (unsigned i = 0; i < e->phnum; i++) {
		const Elf64_Phdr *p = &e->ph[i];
		if (p->p_type == PT_LOAD && v >= p->p_vaddr && v - p->p_vaddr < p->p_filesz) {
			*off = p->p_offset + (v - p->p_vaddr);
			return true;
		}
	}
	return false;
}

static bool in_exec_segment(const struct elf *e, uint64_t v)
{
	for (unsigned i = 0; i < e->phnum; i++) {
		const Elf64_Phdr *p = &e->ph[i];
		if (p->p_type == PT_LOAD && (p->p_flags & PF_X) && v >= (p->p_vaddr & ~(PAGE - 1)) &&
		    v < ((p->p_vaddr + p->p_memsz + PAGE - 1) & ~(PAGE - 1)))
			return true;
	}
	return false;
}

/* Whether the loader writes into executable code: DT_TEXTREL, DF_TEXTREL,
 * or a relocation (RELA, REL, PLT) whose place is in an executable
 * segment.  The file would not be what runs. */
static bool elf_text_relocated(const struct elf *e)
{
	for (unsigned i = 0; i < e->phnum; i++) {
		const Elf64_Phdr *p = &e->ph[i];
		if (p->p_type != PT_DYNAMIC || !fits(e, p->p_offset, p->p_filesz))
			continue;
		const Elf64_Dyn *d = (const void *)(e->img + p->p_offset);
		uint64_t tab[3] = { 0 }, sz[3] = { 0 }, ent[3] = { sizeof(Elf64_Rela), sizeof(Elf64_Rel), 0 };
		uint64_t pltrel = DT_RELA;
		for (size_t k = 0; k < p->p_filesz / sizeof(*d) && d[k].d_tag != DT_NULL; k++) {
			switch (d[k].d_tag) {
			case DT_TEXTREL: return true;
			case DT_FLAGS: if (d[k].d_un.d_val & DF_TEXTREL) return true; break;
			case DT_RELA: tab[0] = d[k].d_un.d_ptr; break;
			case DT_RELASZ: sz[0] = d[k].d_un.d_val; break;
			case DT_REL: tab[1] = d[k].d_un.d_ptr; break;
			case DT_RELSZ: sz[1] = d[k].d_un.d_val; break;
			case DT_JMPREL: tab[2] = d[k].d_un.d_ptr; break;
			case DT_PLTRELSZ: sz[2] = d[k].d_un.d_val; break;
			case DT_PLTREL: pltrel = d[k].d_un.d_val; break;
			}
		}
		ent[2] = pltrel == DT_REL ? sizeof(Elf64_Rel) : sizeof(Elf64_Rela);
		for (int t = 0; t < 3; t++) {
			uint64_t off;
			if (!tab[t] || !sz[t] || !elf_off_of_vaddr(e, tab[t], &off) || !fits(e, off, sz[t]))
				continue;
			for (uint64_t k = 0; k + ent[t] <= sz[t]; k += ent[t]) {
				uint64_t where;
				memcpy(&where, e->img + off + k, 8); /* r_offset: first in both */
				if (in_exec_segment(e, where))
					return true;
			}
		}
	}
	return false;
}

long mpk__scan_file(const char *path, const struct mpk_scan_cb *cb)
{
	struct elf_file f;
	long gadgets = 0;
	int stop = 0;

	if (elf_open(path, &f))
		return -1;
	struct elf *e = &f.e;
	if (e->eh->e_type == ET_REL) {
		for (unsigned i = 0; i < e->shnum; i++) {
			const Elf64_Shdr *s = &e->sh[i];
			if (s->sh_type != SHT_PROGBITS || !(s->sh_flags & SHF_EXECINSTR))
				continue;
			if (!fits(e, s->sh_offset, s->sh_size)) {
				elf_close(&f);
				errno = EBADMSG;
				return -1;
			}
			struct part pt = { 0, s->sh_size, 0, s->sh_offset, (int)i, path, e };
			struct range r = { e->img + s->sh_offset, s->sh_size, 0, &pt, 1 };
			gadgets += scan_range(&r, cb, &stop);
		}
		elf_close(&f);
		return gadgets;
	}
	/* What the loader maps: whole pages of the file around each
	 * executable segment; segments whose pages touch are one range. */
	struct part parts[16];
	uint8_t *buf = NULL;
	size_t np = 0, used = 0;
	uint64_t base = 0;
	int err = 0;
	if (elf_text_relocated(e)) {
		err = ENOTSUP;
		goto done;
	}
	for (unsigned i = 0; i <= e->phnum && !stop; i++) {
		const Elf64_Phdr *p = i < e->phnum ? &e->ph[i] : NULL;
		if (p && (p->p_type != PT_LOAD || !(p->p_flags & PF_X)))
			continue;
		if (p && (!fits(e, p->p_offset, p->p_filesz) || (p->p_offset & (PAGE - 1)) != (p->p_vaddr & (PAGE - 1)))) {
			err = EBADMSG;
			goto done;
		}
		uint64_t v0 = p ? p->p_vaddr & ~(PAGE - 1) : 0, o0 = p ? p->p_offset & ~(PAGE - 1) : 0;
		uint64_t oend = p ? (p->p_offset + p->p_filesz + PAGE - 1) & ~(PAGE - 1) : 0;
		if (oend > e->size)
			oend = e->size; /* the last page: past the end of the file is no code */
		if (np && (!p || v0 != base + used || np == 16)) {
			struct range r = { buf, used, base, parts, np };
			gadgets += scan_range(&r, cb, &stop);
			np = used = 0;
		}
		if (!p)
			break;
		uint8_t *nb = realloc(buf, used + (oend - o0));
		if (!nb) {
			err = ENOMEM;
			goto done;
		}
		buf = nb;
		memcpy(buf + used, e->img + o0, oend - o0);
		if (p->p_memsz > p->p_filesz) /* the loader zeroes the rest of the last page */
			memset(buf + used + (p->p_offset - o0) + p->p_filesz, 0,
			       (size_t)(oend - o0) - (size_t)(p->p_offset - o0) - p->p_filesz);
		if (!np)
			base = v0;
		parts[np++] = (struct part){ used, oend - o0, v0, o0, -1, path, e };
		used += oend - o0;
	}
done:
	free(buf);
	elf_close(&f);
	if (err) {
		errno = err;
		return -1;
	}
	return gadgets;
}

/* The ELF address that file offset off is loaded at, from the segments. */
static bool elf_vaddr_of_off(const struct elf *e, uint64_t off, uint64_t *vaddr)
{
	for (unsigned i = 0; i < e->phnum; i++) {
		const Elf64_Phdr *p = &e->ph[i];
		if (p->p_type == PT_LOAD && off >= p->p_offset && off - p->p_offset < p->p_filesz) {
			*vaddr = p->p_vaddr + (off - p->p_offset);
			return true;
		}
	}
	return false;
}

struct mapping {
	uint64_t lo, hi, off;
	char *path;
};

/* Executable mappings that touch (part of a text segment made r-x apart
 * by mprotect(), the next library's first page...) as one range: a
 * sequence can cross from one to the next. */
static long scan_mappings(int memfd, const struct mapping *m, size_t n, const struct mpk_scan_cb *cb,
			  int *stop)
{
	struct elf_file *f = calloc(n, sizeof(*f));
	struct elf *ve = calloc(n, sizeof(*ve));
	struct part *parts = calloc(n, sizeof(*parts));
	size_t len = (size_t)(m[n - 1].hi - m[0].lo), np = 0, used = 0;
	uint8_t *buf = malloc(len);
	bool short_read = false; /* the last part read ends before its mapping */
	long gadgets = -1;

	if (!f || !ve || !parts || !buf)
		goto out;
	gadgets = 0;
	for (size_t k = 0; k <= n; k++) {
		ssize_t got = k < n ? pread(memfd, buf + used, m[k].hi - m[k].lo, (off_t)m[k].lo) : 0;
		if (np && (k == n || got != (ssize_t)(m[k].hi - m[k].lo) || short_read)) {
			/* what was read so far, as one range */
			struct range r = { buf, used, m[k - np].lo, parts, np };
			gadgets += scan_range(&r, cb, stop);
			memmove(buf, buf + used, got > 0 ? (size_t)got : 0);
			np = used = 0;
		}
		if (k == n || *stop)
			break;
		if (got < 3) {
			/* [vsyscall] cannot be read on kernels that make it
			 * execute-only: its code is the kernel's three fixed
			 * entry stubs. */
			if (cb->mapping)
				cb->mapping(m[k].path, m[k].lo, m[k].hi - m[k].lo, 0, cb->arg);
			continue;
		}
		struct part *pt = &parts[np++];
		uint64_t v;
		short_read = got != (ssize_t)(m[k].hi - m[k].lo);
		*pt = (struct part){ used, (size_t)got, 0, m[k].off, -1, m[k].path, NULL };
		if (m[k].path[0] == '/' && !elf_open(m[k].path, &f[k]) && elf_vaddr_of_off(&f[k].e, m[k].off, &v)) {
			pt->elf = &f[k].e;
			pt->eaddr = v;
		} else if (!strcmp(m[k].path, "[vdso]") && !elf_parse(&ve[k], buf + used, (size_t)got) &&
			   elf_vaddr_of_off(&ve[k], 0, &v)) {
			pt->elf = &ve[k]; /* the vDSO is a whole ELF image, headers included */
			pt->eaddr = v;
		}
		used += (size_t)got;
	}
out:
	for (size_t k = 0; f && k < n; k++)
		elf_close(&f[k]);
	free(f);
	free(ve);
	free(parts);
	free(buf);
	return gadgets;
}

long mpk__scan_pid(pid_t pid, const struct mpk_scan_cb *cb)
{
	char name[64], line[4096 + 128];
	struct mapping *m = NULL;
	size_t n = 0, cap = 0;
	long gadgets = 0;
	int stop = 0, err = 0;

	if (pid)
		snprintf(name, sizeof(name), "/proc/%d/maps", (int)pid);
	else
		snprintf(name, sizeof(name), "/proc/self/maps");
	FILE *f = fopen(name, "re");
	if (!f)
		return -1;
	strcpy(strrchr(name, '/'), "/mem");
	int memfd = open(name, O_RDONLY | O_CLOEXEC);
	if (memfd < 0) {
		int e = errno;
		fclose(f);
		errno = e;
		return -1;
	}
	/* The list first: scanning maps memory of its own. */
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off;
		char perms[5];
		int pos = 0;
		if (sscanf(line, "%lx-%lx %4s %lx %*s %*s %n", &lo, &hi, perms, &off, &pos) < 4 ||
		    perms[2] != 'x' || hi <= lo)
			continue;
		char *path = pos ? line + pos : line + strlen(line);
		path[strcspn(path, "\n")] = 0;
		if (n == cap) {
			struct mapping *nm = realloc(m, (cap = cap ? 2 * cap : 32) * sizeof(*m));
			if (!nm) {
				err = ENOMEM;
				break;
			}
			m = nm;
		}
		m[n] = (struct mapping){ lo, hi, off, strdup(*path ? path : "[anon]") };
		if (!m[n].path) {
			err = ENOMEM;
			break;
		}
		n++;
	}
	for (size_t i = 0, j; !err && !stop && i < n; i = j) {
		for (j = i + 1; j < n && m[j].lo == m[j - 1].hi; j++)
			;
		long g = scan_mappings(memfd, m + i, j - i, cb, &stop);
		if (g < 0) {
			err = errno ? errno : ENOMEM;
			break;
		}
		gadgets += g;
	}
	for (size_t i = 0; i < n; i++)
		free(m[i].path);
	free(m);
	close(memfd);
	fclose(f);
	if (err) {
		errno = err;
		return -1;
	}
	return gadgets;
}
