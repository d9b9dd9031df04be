/* SPDX-License-Identifier: MIT */
/*
 * The x86-64 decoder's own state and operand helpers (prefixes, ModRM,
 * immediates, the registers an instruction writes), shared by its two
 * halves: insn.c (legacy and one-byte map, VEX/EVEX, the entry point) and
 * insn_0f.c (the two- and three-byte maps).  Not installed.
 */
#ifndef MPK_INSN_DEC_H
#define MPK_INSN_DEC_H

#include <string.h>

#include "insn.h"

#define MAX_LEN 15

struct dec {
	const uint8_t *b;
	size_t avail, i;
	bool opsize, adsize, rep2, rep3, bad;
	uint8_t rex;        /* 0x40..0x4f, or 0 */
	/* ModRM, with REX/VEX extensions applied to reg and rm */
	uint8_t modrm, mod, reg3, reg, rm;
	uint16_t addr;      /* registers an memory operand's address uses */
	/* VEX/EVEX */
	uint8_t vvvv, pp;
	bool vw;
	struct insn *in;
};

static inline uint8_t byte(struct dec *d)
{
	if (d->i >= d->avail || d->i >= MAX_LEN) {
		d->bad = true;
		return 0;
	}
	return d->b[d->i++];
}

static inline int64_t imm(struct dec *d, int n)
{
	uint64_t v = 0;
	if (!n)
		return 0;
	for (int k = 0; k < n; k++)
		v |= (uint64_t)byte(d) << (8 * k);
	if (n < 8 && (v >> (8 * n - 1)) & 1)
		v |= ~0ull << (8 * n); /* sign-extended */
	d->in->imm = (int64_t)v;
	d->in->imm_n = (uint8_t)n;
	return (int64_t)v;
}

/* ModRM, SIB and displacement.  In 64-bit mode mod 0 with rm 5 is
 * RIP-relative; an address-size prefix changes nothing of the layout. */
static inline void modrm(struct dec *d, bool rex_r, bool rex_x, bool rex_b)
{
	uint8_t m = byte(d);

	d->modrm = m;
	d->mod = m >> 6;
	d->reg3 = (m >> 3) & 7;
	d->reg = (uint8_t)(d->reg3 | rex_r << 3);
	d->rm = (uint8_t)((m & 7) | rex_b << 3);
	d->addr = 0;
	struct insn *in = d->in;
	in->modrm = m;
	in->mod = d->mod;
	in->reg = d->reg;
	in->rm = d->rm;
	if (d->mod == 3)
		return;
	in->mem = true;
	in->base = in->index = -1;
	int disp = d->mod == 1 ? 1 : d->mod == 2 ? 4 : 0;
	if ((m & 7) == 4) {
		uint8_t sib = byte(d);
		unsigned base = (sib & 7) | rex_b << 3, index = ((sib >> 3) & 7) | rex_x << 3;
		if (index != 4) {
			d->addr |= (uint16_t)(1u << index);
			in->index = (int8_t)index;
			in->scale = (uint8_t)(1u << (sib >> 6));
		}
		if ((sib & 7) == 5 && d->mod == 0) {
			disp = 4;
		} else {
			d->addr |= (uint16_t)(1u << base);
			in->base = (int8_t)base;
		}
	} else if ((m & 7) == 5 && d->mod == 0) {
		disp = 4; /* RIP-relative: a fixed address */
		in->riprel = true;
	} else {
		d->addr |= (uint16_t)(1u << d->rm);
		in->base = (int8_t)d->rm;
	}
	in->disp = imm(d, disp);
	in->imm_n = 0;
	in->imm = 0;
}

static inline void legacy_modrm(struct dec *d)
{
	modrm(d, d->rex & 4, d->rex & 2, d->rex & 1);
}

static inline void dst(struct dec *d, unsigned reg, int kind, int width, uint16_t src, uint64_t v)
{
	struct insn *in = d->in;
	if (in->ndst == INSN_DST_MAX) {
		d->bad = true;
		return;
	}
	struct insn_dst *o = &in->dst[in->ndst++];
	o->reg = (uint8_t)reg;
	o->kind = (uint8_t)kind;
	o->width = (uint8_t)width;
	o->src = src;
	o->src_reg = kind == DST_COPY ? (uint8_t)__builtin_ctz(src) : 0;
	o->imm = v;
}

/* Operand width of a v-sized operation. */
static inline int opw(const struct dec *d)
{
	return d->rex & 8 ? W_64 : d->opsize ? W_16 : W_32;
}

/* An 8-bit register operand: AH, CH, DH, BH without a REX prefix. */
static inline unsigned reg8(const struct dec *d, unsigned r, int *width)
{
	if (!d->rex && r >= 4 && r < 8) {
		*width = W_8H;
		return r - 4;
	}
	*width = W_8L;
	return r;
}

/* The registers an E operand's value depends on: itself, or its address. */
static inline uint16_t esrc(const struct dec *d)
{
	if (d->mod == 3) {
		int w;
		return (uint16_t)(1u << reg8(d, d->rm, &w)); /* byte forms: see callers */
	}
	return d->addr;
}

static inline uint16_t esrc_v(const struct dec *d)
{
	return d->mod == 3 ? (uint16_t)(1u << d->rm) : d->addr;
}

/* reg = a load of the E operand (width w): a copy, a load through
 * registers, or a load from a fixed address. */
static inline void load_e(struct dec *d, unsigned reg, int w)
{
	if (d->mod == 3)
		dst(d, reg, DST_COPY, w, (uint16_t)(1u << d->rm), 0);
	else if (d->addr)
		dst(d, reg, DST_FROM, w, d->addr, 0);
	else
		dst(d, reg, DST_FIXED, w, 0, 0);
}

/* A value placed at bits 8..15 for AH..BH writes. */
static inline uint64_t at(int width, uint64_t v)
{
	return width == W_8H ? (v & 0xff) << 8 : v;
}

/* An ALU operation op (add, or, adc, sbb, and, sub, xor, cmp) writing reg
 * (width w) from itself and from src, or from an immediate. */
static inline void alu(struct dec *d, unsigned op, unsigned reg, int w, uint16_t src, bool has_imm, uint64_t v)
{
	uint64_t ones = w == W_8L ? 0xff : w == W_8H ? 0xff00 : w == W_16 ? 0xffff : ~0ull;

	if (op == 7)
		return; /* cmp */
	if (has_imm && op == 4) /* and: bits outside the width are kept */
		dst(d, reg, DST_AND, W_64, 0, (at(w, v) & ones) | ~ones);
	else if (has_imm && op == 1)
		dst(d, reg, DST_OR, W_64, 0, at(w, v) & ones);
	else
		dst(d, reg, DST_FROM, w, (uint16_t)(src | 1u << reg), 0);
}

static inline void flow(struct dec *d, int f, bool has_target, int64_t rel)
{
	d->in->flow = (uint8_t)f;
	d->in->has_target = has_target;
	d->in->target = rel; /* made relative to the start at the end */
}

/* insn_0f.c: the two-byte map (0f xx) and the three-byte maps. */
void mpk__insn_two_byte(struct dec *d, uint8_t op);

#endif
