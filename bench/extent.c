/* SPDX-License-Identifier: MIT */
/*
 * Where a function of this process is: the file it was loaded from and its
 * extent in that file's addresses, the ones objdump prints.  From the
 * dynamic symbol table where the function is exported (libmpkit.so.0,
 * stripped or not), else from the unwind table (.eh_frame_hdr, which strip
 * keeps): a benchmark linked with libmpkit.a and stripped, as packages
 * install it, still says where mpk_set begins and ends.
 */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "dynsym.h"

struct obj {
	uintptr_t addr;        /* the function, in memory */
	uintptr_t bias;        /* its object's load bias */
	const char *name;      /* its object's path ("": the program) */
	const uint8_t *eh_hdr; /* its object's .eh_frame_hdr, or NULL */
};

static int find_obj(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct obj *o = arg;
	const uint8_t *hdr = NULL;
	int in = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && o->addr >= lo && o->addr - lo < ph->p_memsz)
			in = 1;
		else if (ph->p_type == PT_GNU_EH_FRAME)
			hdr = (const uint8_t *)lo;
	}
	if (in) {
		o->bias = info->dlpi_addr;
		o->name = info->dlpi_name;
		o->eh_hdr = hdr;
	}
	return in;
}

/* One DW_EH_PE-encoded value at *p, moved past: the format in the low 4
 * bits, the base in the next 3 (absolute, pc-relative, or data-relative
 * to datarel).  0 for what this reader does not know (indirect, omitted,
 * LEB128, text- or function-relative). */
static int read_enc(const uint8_t **p, uint8_t enc, uintptr_t datarel, uintptr_t *out)
{
	const uint8_t *at = *p;
	union {
		uint16_t u2;
		uint32_t u4;
		uint64_t u8;
		int16_t s2;
		int32_t s4;
	} v;
	size_t n = 0;
	uintptr_t x;

	switch (enc & 0x0f) {
	case 0x00: case 0x04: case 0x0c: n = 8; break;
	case 0x03: case 0x0b: n = 4; break;
	case 0x02: case 0x0a: n = 2; break;
	default: return 0;
	}
	memcpy(&v, at, n);
	switch (enc & 0x0f) {
	case 0x02: x = v.u2; break;
	case 0x03: x = v.u4; break;
	case 0x0a: x = (uintptr_t)(intptr_t)v.s2; break;
	case 0x0b: x = (uintptr_t)(intptr_t)v.s4; break;
	default: x = (uintptr_t)v.u8; break;
	}
	if (enc & 0x80)
		return 0;
	if ((enc & 0x70) == 0x10)
		x += (uintptr_t)at;
	else if ((enc & 0x70) == 0x30)
		x += datarel;
	else if (enc & 0x70)
		return 0;
	*p = at + n;
	*out = x;
	return 1;
}

static uintptr_t uleb(const uint8_t **p)
{
	uintptr_t v = 0;
	unsigned shift = 0;
	uint8_t b;
	do {
		b = *(*p)++;
		if (shift < 8 * sizeof(v))
			v |= (uintptr_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	return v;
}

/* The FDE's pointer encoding, from its CIE's augmentation ("zR...");
 * -1 where the CIE is not one this reader follows. */
static int fde_encoding(const uint8_t *cie)
{
	const uint8_t *p = cie + 8; /* length, CIE id */
	uint8_t version = *p++;
	const char *aug = (const char *)p;

	p += strlen(aug) + 1;
	if (aug[0] != 'z')
		return aug[0] ? -1 : 0; /* no augmentation: absolute pointers */
	uleb(&p);                   /* code alignment */
	uleb(&p);                   /* data alignment (signed: its bytes are the same) */
	if (version == 1)
		p++;                /* return register */
	else
		uleb(&p);
	uleb(&p); /* augmentation length */
	for (const char *a = aug + 1; *a; a++) {
		uintptr_t skip;
		uint8_t enc;
		if (*a == 'R') {
			return *p;
		} else if (*a == 'L') {
			p++;
		} else if (*a == 'P') { /* the personality routine: skipped */
			enc = *p++;
			if (!read_enc(&p, enc & 0x7f, 0, &skip))
				return -1;
		} else if (*a != 'S' && *a != 'B') {
			return -1;
		}
	}
	return 0;
}

/* [*lo, *hi) of the function at addr from the unwind table's sorted
 * search table; 0, or -1. */
static int from_eh_frame(const uint8_t *hdr, uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
	const uint8_t *p = hdr + 4;
	uintptr_t eh_frame, count, start, fde, range;

	/* version 1, and a table of 4-byte offsets from hdr: what GNU ld makes */
	if (hdr[0] != 1 || hdr[3] != 0x3b || !read_enc(&p, hdr[1], (uintptr_t)hdr, &eh_frame) ||
	    !read_enc(&p, hdr[2], (uintptr_t)hdr, &count) || !count)
		return -1;
	const int32_t *table = (const int32_t *)p;
	size_t a = 0, b = count;
	while (b - a > 1) { /* the last entry that starts at or before addr */
		size_t m = a + (b - a) / 2;
		if ((uintptr_t)hdr + (uintptr_t)(intptr_t)table[2 * m] <= addr)
			a = m;
		else
			b = m;
	}
	start = (uintptr_t)hdr + (uintptr_t)(intptr_t)table[2 * a];
	fde = (uintptr_t)hdr + (uintptr_t)(intptr_t)table[2 * a + 1];
	uint32_t len, cie_off;
	memcpy(&len, (const void *)fde, 4);
	memcpy(&cie_off, (const void *)(fde + 4), 4);
	if (len == 0xffffffff || start > addr)
		return -1;
	int enc = fde_encoding((const uint8_t *)(fde + 4 - cie_off));
	const uint8_t *q = (const uint8_t *)(fde + 8);
	if (enc < 0 || !read_enc(&q, (uint8_t)enc, 0, &start) || !read_enc(&q, (uint8_t)(enc & 0x0f), 0, &range) ||
	    addr < start || addr - start >= range)
		return -1;
	*lo = start;
	*hi = start + range;
	return 0;
}

int bench_fn_extent(const void *fn, char *file, size_t len, unsigned long *start, unsigned long *end)
{
	struct obj o = { .addr = (uintptr_t)fn };
	uintptr_t lo, hi;
	size_t size;

	if (!dl_iterate_phdr(find_obj, &o))
		return -1;
	if ((size = mpk__dynsym_size(fn))) {
		lo = (uintptr_t)fn;
		hi = lo + size;
	} else if (!o.eh_hdr || from_eh_frame(o.eh_hdr, o.addr, &lo, &hi)) {
		return -1;
	}
	if (o.name[0]) {
		snprintf(file, len, "%s", o.name);
	} else {
		ssize_t n = readlink("/proc/self/exe", file, len - 1);
		if (n <= 0)
			return -1;
		file[n] = 0;
	}
	*start = lo - o.bias;
	*end = hi - o.bias;
	return 0;
}
