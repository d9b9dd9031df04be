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

const char *mpk__site_class_name(int cls)
{
	return cls == MPK_SITE_MPKIT ? "mpkit" : cls == MPK_SITE_ROP ? "rop" : "gadget";
}

bool mpk__gate_check_at(const uint8_t *b, size_t len)
{
	size_t i = 0;
	bool rex_r = false;

	if (len > 0 && (b[0] & 0xf0) == 0x40) {
		if (b[0] & 9) /* REX.W or REX.B: not cmp r32, %eax */
			return false;
		rex_r = b[0] & 4;
		i = 1;
	}
	/* 39 /r, mod 3, r/m EAX: cmp r32, %eax; then jne rel32 or rel8 */
	if (len < i + 4 || b[i] != 0x39 || (b[i + 1] & 0xc7) != 0xc0 ||
	    (!rex_r && ((b[i + 1] >> 3) & 7) == 0))
		return false;
	return (b[i + 2] == 0x0f && b[i + 3] == 0x85) || b[i + 2] == 0x75;
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

struct range {
	const uint8_t *bytes;
	size_t len;
	uint64_t addr;   /* reported address of bytes[0] */
	uint64_t eaddr;  /* ELF address of bytes[0] (symbols, sites) */
	uint64_t off;    /* file or mapping offset of bytes[0] */
	int shndx;       /* object files: the section, else -1 */
	const char *where;
	const struct elf *elf; /* or NULL */
};

static long scan_range(const struct range *r, const struct mpk_scan_cb *cb, int *stop)
{
	struct mpk_code code = { .bytes = r->bytes, .len = r->len, .addr = r->addr };
	long gadgets = 0;

	if (cb->mapping)
		cb->mapping(r->where, r->addr, r->len, r->len, cb->arg);
	for (size_t i = 0; i + 3 <= r->len && !*stop; i++) {
		struct mpk_gadget g = { .where = r->where };
		if (!mpk__gadget_at(r->bytes + i, &g.kind))
			continue;
		g.addr = r->addr + i;
		g.file_off = r->off + i;
		if (r->elf) {
			g.sym = elf_symbol(r->elf, r->eaddr + i, r->shndx, &g.sym_off);
			g.mpkit = g.kind == MPK_GADGET_WRPKRU && elf_is_site(r->elf, r->eaddr + i) &&
				  mpk__gate_check_at(r->bytes + i + 3, r->len - i - 3);
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

long mpk__scan_file(const char *path, const struct mpk_scan_cb *cb)
{
	struct elf_file f;
	long gadgets = 0;
	int stop = 0;

	if (elf_open(path, &f))
		return -1;
	struct elf *e = &f.e;
	struct range r = { .where = path, .elf = e, .shndx = -1 };
	if (e->eh->e_type == ET_REL) {
		for (unsigned i = 0; i < e->shnum; i++) {
			const Elf64_Shdr *s = &e->sh[i];
			if (s->sh_type != SHT_PROGBITS || !(s->sh_flags & SHF_EXECINSTR) ||
			    !fits(e, s->sh_offset, s->sh_size))
				continue;
			r.bytes = e->img + s->sh_offset;
			r.len = s->sh_size;
			r.addr = r.eaddr = 0;
			r.off = s->sh_offset;
			r.shndx = (int)i;
			gadgets += scan_range(&r, cb, &stop);
		}
	} else {
		for (unsigned i = 0; i < e->phnum; i++) {
			const Elf64_Phdr *p = &e->ph[i];
			if (p->p_type != PT_LOAD || !(p->p_flags & PF_X) || !fits(e, p->p_offset, p->p_filesz))
				continue;
			r.bytes = e->img + p->p_offset;
			r.len = p->p_filesz;
			r.addr = r.eaddr = p->p_vaddr;
			r.off = p->p_offset;
			gadgets += scan_range(&r, cb, &stop);
		}
	}
	elf_close(&f);
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

static long scan_mapping(int memfd, uint64_t lo, uint64_t hi, uint64_t off, const char *path,
			 const struct mpk_scan_cb *cb, int *stop)
{
	size_t len = hi - lo;
	uint8_t *buf = malloc(len);
	struct elf_file f = { 0 };
	struct elf e;
	long gadgets;

	if (!buf)
		return -1;
	ssize_t n = pread(memfd, buf, len, (off_t)lo);
	if (n < 3) {
		/* [vsyscall] cannot be read on kernels that make it execute-only:
		 * its code is the kernel's fixed three entry stubs. */
		if (cb->mapping)
			cb->mapping(path, lo, len, 0, cb->arg);
		free(buf);
		return 0;
	}
	struct range r = { .bytes = buf, .len = (size_t)n, .addr = lo, .off = off, .where = path, .shndx = -1 };
	uint64_t v;
	if (path[0] == '/' && !elf_open(path, &f) && elf_vaddr_of_off(&f.e, off, &v)) {
		r.elf = &f.e;
		r.eaddr = v;
	} else if (!strcmp(path, "[vdso]") && !elf_parse(&e, buf, (size_t)n) &&
		   elf_vaddr_of_off(&e, 0, &v)) {
		r.elf = &e; /* the vDSO is a whole ELF image, headers included */
		r.eaddr = v;
	}
	gadgets = scan_range(&r, cb, stop);
	elf_close(&f);
	free(buf);
	return gadgets;
}

long mpk__scan_pid(pid_t pid, const struct mpk_scan_cb *cb)
{
	char name[64], line[4096 + 128];
	long gadgets = 0;
	int stop = 0;

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
	while (!stop && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off;
		char perms[5];
		int pos = 0;
		if (sscanf(line, "%lx-%lx %4s %lx %*s %*s %n", &lo, &hi, perms, &off, &pos) < 4 ||
		    perms[2] != 'x')
			continue;
		char *path = pos ? line + pos : line + strlen(line);
		path[strcspn(path, "\n")] = 0;
		long n = scan_mapping(memfd, lo, hi, off, *path ? path : "[anon]", cb, &stop);
		if (n < 0) {
			gadgets = -1;
			break;
		}
		gadgets += n;
	}
	int e = errno;
	close(memfd);
	fclose(f);
	errno = e;
	return gadgets;
}
