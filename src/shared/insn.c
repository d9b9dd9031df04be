/* SPDX-License-Identifier: MIT */
/*
 * x86-64 decoding for the scan's classes (see insn.h).  Lengths follow the
 * opcode maps of the Intel SDM volume 2 (appendix A) in 64-bit mode: legacy
 * prefixes, REX, the one-, two- and three-byte maps, VEX and EVEX.  Register
 * effects are modelled for every instruction that writes a general-purpose
 * register; vector instructions write none, except the few that move a
 * value into one (taken as DST_FIXED: vector registers are not followed).
 * Instructions that fault in user mode (privileged, in/out without ioperm,
 * ud2) end the flow: no path runs through them.
 */
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

static uint8_t byte(struct dec *d)
{
	if (d->i >= d->avail || d->i >= MAX_LEN) {
		d->bad = true;
		return 0;
	}
	return d->b[d->i++];
}

static int64_t imm(struct dec *d, int n)
{
	uint64_t v = 0;
	if (!n)
		return 0;
	for (int k = 0; k < n; k++)
		v |= (uint64_t)byte(d) << (8 * k);
	if (n < 8 && (v >> (8 * n - 1)) & 1)
		v |= ~0ull << (8 * n); /* sign-extended */
	return (int64_t)v;
}

/* ModRM, SIB and displacement.  In 64-bit mode mod 0 with rm 5 is
 * RIP-relative; an address-size prefix changes nothing of the layout. */
static void modrm(struct dec *d, bool rex_r, bool rex_x, bool rex_b)
{
	uint8_t m = byte(d);

	d->modrm = m;
	d->mod = m >> 6;
	d->reg3 = (m >> 3) & 7;
	d->reg = (uint8_t)(d->reg3 | rex_r << 3);
	d->rm = (uint8_t)((m & 7) | rex_b << 3);
	d->addr = 0;
	if (d->mod == 3)
		return;
	int disp = d->mod == 1 ? 1 : d->mod == 2 ? 4 : 0;
	if ((m & 7) == 4) {
		uint8_t sib = byte(d);
		unsigned base = (sib & 7) | rex_b << 3, index = ((sib >> 3) & 7) | rex_x << 3;
		if (index != 4)
			d->addr |= (uint16_t)(1u << index);
		if ((sib & 7) == 5 && d->mod == 0)
			disp = 4;
		else
			d->addr |= (uint16_t)(1u << base);
	} else if ((m & 7) == 5 && d->mod == 0) {
		disp = 4; /* RIP-relative: a fixed address */
	} else {
		d->addr |= (uint16_t)(1u << d->rm);
	}
	imm(d, disp);
}

static void legacy_modrm(struct dec *d)
{
	modrm(d, d->rex & 4, d->rex & 2, d->rex & 1);
}

static void dst(struct dec *d, unsigned reg, int kind, int width, uint16_t src, uint64_t v)
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
static int opw(const struct dec *d)
{
	return d->rex & 8 ? W_64 : d->opsize ? W_16 : W_32;
}

/* An 8-bit register operand: AH, CH, DH, BH without a REX prefix. */
static unsigned reg8(const struct dec *d, unsigned r, int *width)
{
	if (!d->rex && r >= 4 && r < 8) {
		*width = W_8H;
		return r - 4;
	}
	*width = W_8L;
	return r;
}

/* The registers an E operand's value depends on: itself, or its address. */
static uint16_t esrc(const struct dec *d)
{
	if (d->mod == 3) {
		int w;
		return (uint16_t)(1u << reg8(d, d->rm, &w)); /* byte forms: see callers */
	}
	return d->addr;
}

static uint16_t esrc_v(const struct dec *d)
{
	return d->mod == 3 ? (uint16_t)(1u << d->rm) : d->addr;
}

/* reg = a load of the E operand (width w): a copy, a load through
 * registers, or a load from a fixed address. */
static void load_e(struct dec *d, unsigned reg, int w)
{
	if (d->mod == 3)
		dst(d, reg, DST_COPY, w, (uint16_t)(1u << d->rm), 0);
	else if (d->addr)
		dst(d, reg, DST_FROM, w, d->addr, 0);
	else
		dst(d, reg, DST_FIXED, w, 0, 0);
}

/* A value placed at bits 8..15 for AH..BH writes. */
static uint64_t at(int width, uint64_t v)
{
	return width == W_8H ? (v & 0xff) << 8 : v;
}

/* An ALU operation op (add, or, adc, sbb, and, sub, xor, cmp) writing reg
 * (width w) from itself and from src, or from an immediate. */
static void alu(struct dec *d, unsigned op, unsigned reg, int w, uint16_t src, bool has_imm, uint64_t v)
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

static void flow(struct dec *d, int f, bool has_target, int64_t rel)
{
	d->in->flow = (uint8_t)f;
	d->in->has_target = has_target;
	d->in->target = rel; /* made relative to the start at the end */
}

static void one_byte(struct dec *d, uint8_t op)
{
	int w, w2;
	unsigned r;

	if (op < 0x40 && (op & 7) < 6) { /* add or adc sbb and sub xor cmp */
		unsigned aop = op >> 3;
		switch (op & 7) {
		case 0: case 1:
			legacy_modrm(d);
			if (d->mod != 3)
				return;
			if (op & 1) {
				w = w2 = opw(d);
				r = d->rm;
			} else {
				r = reg8(d, d->rm, &w);
				reg8(d, d->reg, &w2);
			}
			if ((aop == 6 || aop == 5) && d->rm == d->reg && w == w2) /* xor/sub r, r */
				dst(d, r, DST_CONST, w, 0, 0);
			else if (op & 1)
				alu(d, aop, r, w, (uint16_t)(1u << d->reg), false, 0);
			else
				alu(d, aop, r, w, (uint16_t)(1u << reg8(d, d->reg, &w2)), false, 0);
			return;
		case 2: case 3:
			legacy_modrm(d);
			if (op & 1) {
				w = opw(d);
				r = d->reg;
				if (d->mod == 3 && d->rm == d->reg && (aop == 6 || aop == 5)) {
					dst(d, r, DST_CONST, w, 0, 0);
					return;
				}
				alu(d, aop, r, w, esrc_v(d), false, 0);
			} else {
				r = reg8(d, d->reg, &w);
				alu(d, aop, r, w, esrc(d), false, 0);
			}
			return;
		case 4:
			alu(d, aop, INSN_RAX, W_8L, 0, true, (uint64_t)imm(d, 1));
			return;
		default:
			w = opw(d);
			alu(d, aop, INSN_RAX, w, 0, true, (uint64_t)imm(d, w == W_16 ? 2 : 4));
			return;
		}
	}
	if (op >= 0x50 && op <= 0x57) {
		dst(d, INSN_RSP, DST_FROM, W_64, 1u << INSN_RSP, 0);
		return;
	}
	if (op >= 0x58 && op <= 0x5f) {
		r = (op & 7) | (d->rex & 1) << 3;
		dst(d, r, DST_FROM, W_64, 1u << INSN_RSP, 0);
		if (r != INSN_RSP)
			dst(d, INSN_RSP, DST_FROM, W_64, 1u << INSN_RSP, 0);
		return;
	}
	if (op >= 0x70 && op <= 0x7f) {
		flow(d, FLOW_COND, true, imm(d, 1));
		return;
	}
	if (op >= 0x91 && op <= 0x97) {
		r = (op & 7) | (d->rex & 1) << 3;
		dst(d, INSN_RAX, DST_COPY, opw(d), (uint16_t)(1u << r), 0);
		dst(d, r, DST_COPY, opw(d), 1u << INSN_RAX, 0);
		return;
	}
	if (op >= 0xb0 && op <= 0xb7) {
		r = reg8(d, (op & 7) | (d->rex & 1) << 3, &w);
		dst(d, r, DST_CONST, w, 0, at(w, (uint64_t)imm(d, 1) & 0xff));
		return;
	}
	if (op >= 0xb8 && op <= 0xbf) {
		w = opw(d);
		int64_t v = imm(d, w == W_64 ? 8 : w == W_16 ? 2 : 4);
		uint64_t u = w == W_32 ? (uint32_t)v : w == W_16 ? (uint16_t)v : (uint64_t)v;
		dst(d, (op & 7) | (d->rex & 1) << 3, DST_CONST, w, 0, u);
		return;
	}
	if (op >= 0xd8 && op <= 0xdf) { /* x87: only fnstsw %ax writes one */
		legacy_modrm(d);
		if (op == 0xdf && d->modrm == 0xe0)
			dst(d, INSN_RAX, DST_FIXED, W_16, 0, 0);
		return;
	}
	switch (op) {
	case 0x63: /* movsxd */
		legacy_modrm(d);
		dst(d, d->reg, esrc_v(d) ? DST_FROM : DST_FIXED, opw(d), esrc_v(d), 0);
		return;
	case 0x68:
		imm(d, d->opsize ? 2 : 4);
		dst(d, INSN_RSP, DST_FROM, W_64, 1u << INSN_RSP, 0);
		return;
	case 0x6a:
		imm(d, 1);
		dst(d, INSN_RSP, DST_FROM, W_64, 1u << INSN_RSP, 0);
		return;
	case 0x69: case 0x6b: /* imul r, r/m, imm */
		legacy_modrm(d);
		imm(d, op == 0x6b ? 1 : d->opsize ? 2 : 4);
		dst(d, d->reg, esrc_v(d) ? DST_FROM : DST_FIXED, opw(d), esrc_v(d), 0);
		return;
	case 0x80: case 0x81: case 0x83:
		legacy_modrm(d);
		if (op == 0x80) {
			int64_t v = imm(d, 1);
			r = reg8(d, d->rm, &w);
			if (d->mod == 3)
				alu(d, d->reg3, r, w, 0, true, (uint64_t)v);
		} else {
			w = opw(d);
			int64_t v = imm(d, op == 0x83 ? 1 : w == W_16 ? 2 : 4);
			if (d->mod == 3)
				alu(d, d->reg3, d->rm, w, 0, true, (uint64_t)v);
		}
		return;
	case 0x84: case 0x85:
		legacy_modrm(d);
		return;
	case 0x86: case 0x87: case 0x88: case 0x89: case 0x8a: case 0x8b:
		legacy_modrm(d);
		if (op & 1) {
			w = w2 = opw(d);
			r = d->reg;
		} else {
			r = reg8(d, d->reg, &w2);
			w = w2;
		}
		if (op <= 0x87 || op >= 0x8a) { /* the register operand is written */
			if (d->mod == 3 && !(op & 1)) {
				unsigned e = reg8(d, d->rm, &w);
				dst(d, r, DST_FROM, w2, (uint16_t)(1u << e | 1u << r), 0);
			} else {
				load_e(d, r, w);
			}
		}
		if (op <= 0x89 && d->mod == 3) { /* the r/m operand is written */
			if (op & 1)
				dst(d, d->rm, DST_COPY, w, (uint16_t)(1u << d->reg), 0);
			else {
				unsigned e = reg8(d, d->rm, &w);
				dst(d, e, DST_FROM, w, (uint16_t)(1u << r | 1u << e), 0);
			}
		}
		return;
	case 0x8c:
		legacy_modrm(d);
		if (d->mod == 3)
			dst(d, d->rm, DST_FIXED, opw(d), 0, 0);
		return;
	case 0x8d: /* lea */
		legacy_modrm(d);
		if (d->mod == 3)
			d->bad = true;
		else
			dst(d, d->reg, d->addr ? DST_FROM : DST_FIXED, opw(d), d->addr, 0);
		return;
	case 0x8e:
		legacy_modrm(d);
		return;
	case 0x8f: /* pop r/m; other reg fields are XOP */
		legacy_modrm(d);
		if (d->reg3) {
			d->bad = true;
			return;
		}
		if (d->mod == 3)
			dst(d, d->rm, DST_FROM, W_64, 1u << INSN_RSP, 0);
		if (d->mod != 3 || d->rm != INSN_RSP)
			dst(d, INSN_RSP, DST_FROM, W_64, 1u << INSN_RSP, 0);
		return;
	case 0x90:
		if (d->rex & 1) { /* xchg r8, rax */
			dst(d, INSN_RAX, DST_COPY, opw(d), 1u << 8, 0);
			dst(d, 8, DST_COPY, opw(d), 1u << INSN_RAX, 0);
		}
		return;
	case 0x98:
		dst(d, INSN_RAX, DST_FROM, opw(d), 1u << INSN_RAX, 0);
		return;
	case 0x99:
		dst(d, INSN_RDX, DST_FROM, opw(d), 1u << INSN_RAX, 0);
		return;
	case 0x9b: case 0x9e: case 0xf5: case 0xf8: case 0xf9: case 0xfc: case 0xfd:
		return;
	case 0x9c: case 0x9d:
		dst(d, INSN_RSP, DST_FROM, W_64, 1u << INSN_RSP, 0);
		return;
	case 0x9f: /* lahf */
		dst(d, INSN_RAX, DST_FIXED, W_8H, 0, 0);
		return;
	case 0xa0: case 0xa1: case 0xa2: case 0xa3:
		imm(d, d->adsize ? 4 : 8);
		if (op == 0xa0)
			dst(d, INSN_RAX, DST_FIXED, W_8L, 0, 0);
		else if (op == 0xa1)
			dst(d, INSN_RAX, DST_FIXED, opw(d), 0, 0);
		return;
	case 0xa4: case 0xa5: case 0xa6: case 0xa7: /* movs, cmps */
		dst(d, INSN_RSI, DST_FROM, W_64, 1u << INSN_RSI, 0);
		dst(d, INSN_RDI, DST_FROM, W_64, 1u << INSN_RDI, 0);
		if (d->rep2 || d->rep3)
			dst(d, INSN_RCX, op <= 0xa5 ? DST_CONST : DST_FIXED, W_64, 0, 0);
		return;
	case 0xa8:
		imm(d, 1);
		return;
	case 0xa9:
		imm(d, d->opsize ? 2 : 4);
		return;
	case 0xaa: case 0xab: case 0xae: case 0xaf: /* stos, scas */
		dst(d, INSN_RDI, DST_FROM, W_64, 1u << INSN_RDI, 0);
		if (d->rep2 || d->rep3)
			dst(d, INSN_RCX, op <= 0xab ? DST_CONST : DST_FIXED, W_64, 0, 0);
		return;
	case 0xac: case 0xad: /* lods */
		dst(d, INSN_RAX, DST_FROM, op == 0xac ? W_8L : opw(d), 1u << INSN_RSI, 0);
		dst(d, INSN_RSI, DST_FROM, W_64, 1u << INSN_RSI, 0);
		if (d->rep2 || d->rep3)
			dst(d, INSN_RCX, DST_CONST, W_64, 0, 0);
		return;
	case 0xc0: case 0xc1: case 0xd0: case 0xd1: case 0xd2: case 0xd3: /* shifts */
		legacy_modrm(d);
		if (op <= 0xc1)
			imm(d, 1);
		if (d->mod == 3) {
			r = op & 1 ? d->rm : reg8(d, d->rm, &w);
			dst(d, r, DST_FROM, op & 1 ? opw(d) : w,
			    (uint16_t)(1u << r | (op >= 0xd2 ? 1u << INSN_RCX : 0)), 0);
		}
		return;
	case 0xc2: case 0xca:
		imm(d, 2);
		flow(d, FLOW_JUMP, false, 0);
		return;
	case 0xc3: case 0xcb: case 0xcf:
		flow(d, FLOW_JUMP, false, 0);
		return;
	case 0xc6: case 0xc7:
		legacy_modrm(d);
		if (d->modrm == 0xf8) { /* xabort, xbegin */
			if (op == 0xc6)
				imm(d, 1);
			else
				flow(d, FLOW_COND, true, imm(d, d->opsize ? 2 : 4));
			dst(d, INSN_RAX, DST_FIXED, W_32, 0, 0);
			return;
		}
		if (d->reg3) {
			d->bad = true;
			return;
		}
		if (op == 0xc6) {
			int64_t v = imm(d, 1);
			if (d->mod == 3) {
				r = reg8(d, d->rm, &w);
				dst(d, r, DST_CONST, w, 0, at(w, (uint64_t)v & 0xff));
			}
		} else {
			w = opw(d);
			int64_t v = imm(d, w == W_16 ? 2 : 4);
			if (d->mod == 3)
				dst(d, d->rm, DST_CONST, w,
				    0, w == W_32 ? (uint32_t)v : w == W_16 ? (uint16_t)v : (uint64_t)v);
		}
		return;
	case 0xc8:
		imm(d, 2);
		imm(d, 1);
		dst(d, INSN_RSP, DST_FROM, W_64, 1u << INSN_RSP, 0);
		dst(d, INSN_RBP, DST_FROM, W_64, 1u << INSN_RSP, 0);
		return;
	case 0xc9:
		dst(d, INSN_RSP, DST_FROM, W_64, 1u << INSN_RBP, 0);
		dst(d, INSN_RBP, DST_FROM, W_64, 1u << INSN_RBP, 0);
		return;
	case 0xcd: /* int 0x80 comes back; any other vector faults */
		if (imm(d, 1) == (int64_t)(int8_t)0x80)
			dst(d, INSN_RAX, DST_FIXED, W_64, 0, 0);
		else
			flow(d, FLOW_STOP, false, 0);
		return;
	case 0xd7: /* xlat */
		dst(d, INSN_RAX, DST_FROM, W_8L, 1u << INSN_RAX | 1u << INSN_RBX, 0);
		return;
	case 0xe0: case 0xe1: case 0xe2:
		flow(d, FLOW_COND, true, imm(d, 1));
		dst(d, INSN_RCX, DST_FROM, W_64, 1u << INSN_RCX, 0);
		return;
	case 0xe3:
		flow(d, FLOW_COND, true, imm(d, 1));
		return;
	case 0xe8:
		flow(d, FLOW_CALL, true, imm(d, 4));
		return;
	case 0xe9:
		flow(d, FLOW_JUMP, true, imm(d, 4));
		return;
	case 0xeb:
		flow(d, FLOW_JUMP, true, imm(d, 1));
		return;
	case 0xcc: case 0xf1: case 0xf4: case 0xfa: case 0xfb:
	case 0x6c: case 0x6d: case 0x6e: case 0x6f: case 0xec: case 0xed: case 0xee: case 0xef:
		flow(d, FLOW_STOP, false, 0);
		return;
	case 0xe4: case 0xe5: case 0xe6: case 0xe7:
		imm(d, 1);
		flow(d, FLOW_STOP, false, 0);
		return;
	case 0xf6: case 0xf7:
		legacy_modrm(d);
		w = op & 1 ? opw(d) : W_8L;
		r = op & 1 ? d->rm : reg8(d, d->rm, &w2);
		switch (d->reg3) {
		case 0: case 1:
			imm(d, op == 0xf6 ? 1 : w == W_16 ? 2 : 4);
			return;
		case 2: case 3:
			if (d->mod == 3)
				dst(d, r, DST_FROM, op & 1 ? w : w2, (uint16_t)(1u << r), 0);
			return;
		default: {
			uint16_t s = (uint16_t)(1u << INSN_RAX | (op & 1 ? esrc_v(d) : esrc(d)) |
						(d->reg3 >= 6 && (op & 1) ? 1u << INSN_RDX : 0));
			if (op == 0xf6) {
				dst(d, INSN_RAX, DST_FROM, W_16, s, 0);
			} else {
				dst(d, INSN_RAX, DST_FROM, w, s, 0);
				dst(d, INSN_RDX, DST_FROM, w, s, 0);
			}
			return;
		}
		}
	case 0xfe:
		legacy_modrm(d);
		if (d->reg3 > 1)
			d->bad = true;
		else if (d->mod == 3) {
			r = reg8(d, d->rm, &w);
			dst(d, r, DST_FROM, w, (uint16_t)(1u << r), 0);
		}
		return;
	case 0xff:
		legacy_modrm(d);
		switch (d->reg3) {
		case 0: case 1:
			if (d->mod == 3)
				dst(d, d->rm, DST_FROM, opw(d), (uint16_t)(1u << d->rm), 0);
			return;
		case 2: case 3:
			if (d->reg3 == 3 && d->mod == 3)
				d->bad = true;
			flow(d, FLOW_CALL, false, 0);
			return;
		case 4: case 5:
			if (d->reg3 == 5 && d->mod == 3)
				d->bad = true;
			flow(d, FLOW_JUMP, false, 0);
			return;
		case 6:
			dst(d, INSN_RSP, DST_FROM, W_64, 1u << INSN_RSP, 0);
			return;
		default:
			d->bad = true;
			return;
		}
	default:
		/* 06 07 0e 16 17 1e 1f 27 2f 37 3f 60 61 82 9a ce d4 d5 d6 ea:
		 * invalid in 64-bit mode; prefixes were taken before. */
		d->bad = true;
		return;
	}
}

/* Two-byte map (0f xx); three-byte maps 0f 38 and 0f 3a. */
static void two_byte(struct dec *d, uint8_t op)
{
	int w = opw(d);
	unsigned r;

	if (op == 0x38 || op == 0x3a) {
		uint8_t op3 = byte(d);
		legacy_modrm(d);
		if (op == 0x3a) {
			imm(d, 1);
			if (op3 >= 0x14 && op3 <= 0x17 && d->mod == 3)
				dst(d, d->rm, DST_FIXED, d->rex & 8 ? W_64 : W_32, 0, 0);
			else if (op3 == 0x61 || op3 == 0x63)
				dst(d, INSN_RCX, DST_FIXED, W_32, 0, 0);
			return;
		}
		if ((op3 == 0xf0 || op3 == 0xf1) && d->rep2) /* crc32 */
			dst(d, d->reg, DST_FROM, d->rex & 8 ? W_64 : W_32,
			    (uint16_t)(1u << d->reg | (op3 == 0xf1 ? esrc_v(d) : esrc(d))), 0);
		else if (op3 == 0xf0 && d->mod != 3) /* movbe load */
			dst(d, d->reg, d->addr ? DST_FROM : DST_FIXED, w, d->addr, 0);
		else if (op3 == 0xf6 && (d->opsize || d->rep3)) /* adcx, adox */
			dst(d, d->reg, DST_FROM, d->rex & 8 ? W_64 : W_32,
			    (uint16_t)(1u << d->reg | esrc_v(d)), 0);
		return;
	}
	if (op >= 0x80 && op <= 0x8f) {
		flow(d, FLOW_COND, true, imm(d, 4));
		return;
	}
	if (op >= 0xc8 && op <= 0xcf) {
		r = (op & 7) | (d->rex & 1) << 3;
		dst(d, r, DST_FROM, w, (uint16_t)(1u << r), 0);
		return;
	}
	if (op >= 0x40 && op <= 0x4f) { /* cmov */
		legacy_modrm(d);
		dst(d, d->reg, DST_FROM, w, (uint16_t)(1u << d->reg | esrc_v(d)), 0);
		return;
	}
	if (op >= 0x90 && op <= 0x9f) { /* setcc */
		legacy_modrm(d);
		if (d->mod == 3) {
			int w8;
			r = reg8(d, d->rm, &w8);
			dst(d, r, DST_FIXED, w8, 0, 0);
		}
		return;
	}
	switch (op) {
	case 0x00:
		legacy_modrm(d);
		if (d->reg3 <= 1 && d->mod == 3)
			dst(d, d->rm, DST_FIXED, w, 0, 0);
		else if (d->reg3 == 2 || d->reg3 == 3)
			flow(d, FLOW_STOP, false, 0);
		else if (d->reg3 >= 6)
			d->bad = true;
		return;
	case 0x01:
		legacy_modrm(d);
		if (d->mod != 3) {
			if (d->reg3 == 2 || d->reg3 == 3 || d->reg3 >= 6)
				flow(d, FLOW_STOP, false, 0);
			return;
		}
		switch (d->modrm) {
		case 0xd0: /* xgetbv */
		case 0xee: /* rdpkru */
			dst(d, INSN_RAX, DST_FIXED, W_32, 0, 0);
			dst(d, INSN_RDX, DST_FIXED, W_32, 0, 0);
			return;
		case 0xf9: /* rdtscp */
			dst(d, INSN_RAX, DST_FIXED, W_32, 0, 0);
			dst(d, INSN_RDX, DST_FIXED, W_32, 0, 0);
			dst(d, INSN_RCX, DST_FIXED, W_32, 0, 0);
			return;
		case 0xd5: case 0xd6: case 0xe8: case 0xef: case 0xfa: case 0xfb: case 0xfc:
			return; /* xend xtest serialize wrpkru monitorx mwaitx clzero */
		default:
			if (d->reg3 == 4)
				dst(d, d->rm, DST_FIXED, w, 0, 0); /* smsw */
			else
				flow(d, FLOW_STOP, false, 0);
			return;
		}
	case 0x02: case 0x03: /* lar, lsl */
		legacy_modrm(d);
		dst(d, d->reg, DST_FIXED, w, 0, 0);
		return;
	case 0x05: /* syscall */
		dst(d, INSN_RAX, DST_FIXED, W_64, 0, 0);
		dst(d, INSN_RCX, DST_FIXED, W_64, 0, 0);
		dst(d, 11, DST_FIXED, W_64, 0, 0);
		return;
	case 0x06: case 0x07: case 0x08: case 0x09: case 0x0b: case 0x30: case 0x32:
	case 0x34: case 0x35: case 0x37: case 0xaa:
		flow(d, FLOW_STOP, false, 0);
		return;
	case 0x0e: case 0x77:
		return;
	case 0x0f: /* 3DNow!: the opcode comes last */
		legacy_modrm(d);
		imm(d, 1);
		return;
	case 0x20: case 0x21: case 0x22: case 0x23: case 0x78: case 0x79: case 0xb9: case 0xff:
		legacy_modrm(d);
		flow(d, FLOW_STOP, false, 0);
		return;
	case 0x2c: case 0x2d: case 0x50: case 0xd7:
		legacy_modrm(d);
		dst(d, d->reg, DST_FIXED, op <= 0x2d && (d->rex & 8) ? W_64 : W_32, 0, 0);
		return;
	case 0x31: case 0x33: /* rdtsc, rdpmc */
		dst(d, INSN_RAX, DST_FIXED, W_32, 0, 0);
		dst(d, INSN_RDX, DST_FIXED, W_32, 0, 0);
		return;
	case 0x70: case 0x71: case 0x72: case 0x73: case 0xc2: case 0xc4: case 0xc6:
		legacy_modrm(d);
		imm(d, 1);
		return;
	case 0x7e:
		legacy_modrm(d);
		if (d->mod == 3 && !d->rep3)
			dst(d, d->rm, DST_FIXED, d->rex & 8 ? W_64 : W_32, 0, 0);
		return;
	case 0xa0: case 0xa1: case 0xa8: case 0xa9:
		dst(d, INSN_RSP, DST_FROM, W_64, 1u << INSN_RSP, 0);
		return;
	case 0xa2: /* cpuid */
		for (unsigned k = 0; k < 4; k++)
			dst(d, k, DST_FIXED, W_32, 0, 0);
		return;
	case 0xa3:
		legacy_modrm(d);
		return;
	case 0xa4: case 0xa5: case 0xac: case 0xad: case 0xab: case 0xb3: case 0xbb:
		legacy_modrm(d);
		if (op == 0xa4 || op == 0xac)
			imm(d, 1);
		if (d->mod == 3)
			dst(d, d->rm, DST_FROM, w,
			    (uint16_t)(1u << d->rm | 1u << d->reg |
				       (op == 0xa5 || op == 0xad ? 1u << INSN_RCX : 0)), 0);
		return;
	case 0xae:
		legacy_modrm(d);
		if (d->mod == 3 && d->rep3 && d->reg3 <= 1) /* rdfsbase, rdgsbase */
			dst(d, d->rm, DST_FIXED, w, 0, 0);
		return;
	case 0xaf: case 0xbc: case 0xbd: /* imul, bsf/tzcnt, bsr/lzcnt */
		legacy_modrm(d);
		dst(d, d->reg, DST_FROM, w, (uint16_t)(1u << d->reg | esrc_v(d)), 0);
		return;
	case 0xb0: case 0xb1: /* cmpxchg */
		legacy_modrm(d);
		if (op == 0xb0) {
			dst(d, INSN_RAX, DST_FROM, W_8L, (uint16_t)(1u << INSN_RAX | esrc(d)), 0);
			if (d->mod == 3) {
				int w8;
				r = reg8(d, d->rm, &w8);
				dst(d, r, DST_FROM, w8, (uint16_t)(1u << r | 1u << reg8(d, d->reg, &w8)), 0);
			}
		} else {
			dst(d, INSN_RAX, DST_FROM, w, (uint16_t)(1u << INSN_RAX | esrc_v(d)), 0);
			if (d->mod == 3)
				dst(d, d->rm, DST_FROM, w, (uint16_t)(1u << d->rm | 1u << d->reg), 0);
		}
		return;
	case 0xb2: case 0xb4: case 0xb5: /* lss, lfs, lgs */
		legacy_modrm(d);
		if (d->mod == 3)
			d->bad = true;
		else
			dst(d, d->reg, d->addr ? DST_FROM : DST_FIXED, w, d->addr, 0);
		return;
	case 0xb6: /* movzx from 8 bits: bits 8 and up are 0 */
		legacy_modrm(d);
		dst(d, d->reg, DST_ZX8, w, esrc(d), 0);
		return;
	case 0xb7: case 0xbe: case 0xbf: /* movzx from 16, movsx */
		legacy_modrm(d);
		dst(d, d->reg, esrc(d) ? DST_FROM : DST_FIXED, w, op == 0xbe ? esrc(d) : esrc_v(d), 0);
		return;
	case 0xb8: /* popcnt; jmpe without f3 */
		legacy_modrm(d);
		if (!d->rep3)
			d->bad = true;
		else
			dst(d, d->reg, esrc_v(d) ? DST_FROM : DST_FIXED, w, esrc_v(d), 0);
		return;
	case 0xba:
		legacy_modrm(d);
		imm(d, 1);
		if (d->reg3 < 4)
			d->bad = true;
		else if (d->reg3 > 4 && d->mod == 3)
			dst(d, d->rm, DST_FROM, w, (uint16_t)(1u << d->rm), 0);
		return;
	case 0xc0: case 0xc1: /* xadd */
		legacy_modrm(d);
		if (op == 0xc0) {
			int w8, w8b;
			unsigned g = reg8(d, d->reg, &w8);
			if (d->mod == 3) {
				r = reg8(d, d->rm, &w8b);
				dst(d, r, DST_FROM, w8b, (uint16_t)(1u << r | 1u << g), 0);
			}
			dst(d, g, esrc(d) ? DST_FROM : DST_FIXED, w8, esrc(d), 0);
		} else {
			if (d->mod == 3)
				dst(d, d->rm, DST_FROM, w, (uint16_t)(1u << d->rm | 1u << d->reg), 0);
			dst(d, d->reg, esrc_v(d) ? DST_FROM : DST_FIXED, w, esrc_v(d), 0);
		}
		return;
	case 0xc5: /* pextrw */
		legacy_modrm(d);
		imm(d, 1);
		dst(d, d->reg, DST_FIXED, W_32, 0, 0);
		return;
	case 0xc7:
		legacy_modrm(d);
		if (d->reg3 == 1 && d->mod != 3) { /* cmpxchg8b/16b */
			uint16_t s = (uint16_t)(1u << INSN_RAX | 1u << INSN_RDX | d->addr);
			dst(d, INSN_RAX, DST_FROM, W_64, s, 0);
			dst(d, INSN_RDX, DST_FROM, W_64, s, 0);
		} else if ((d->reg3 == 6 || d->reg3 == 7) && d->mod == 3) { /* rdrand rdseed rdpid */
			dst(d, d->rm, DST_FIXED, d->reg3 == 7 && d->rep3 ? W_64 : w, 0, 0);
		} else if (d->reg3 == 4 && d->mod != 3) { /* xsavec */
		} else if (d->reg3 >= 3) {
			flow(d, FLOW_STOP, false, 0); /* xrstors xsaves vmptrld vmptrst */
		} else {
			d->bad = true;
		}
		return;
	case 0x04: case 0x0a: case 0x0c: case 0x24: case 0x25: case 0x26: case 0x27:
	case 0x36: case 0x39: case 0x3b: case 0x3c: case 0x3d: case 0x3e: case 0x3f:
	case 0x7a: case 0x7b: case 0xa6: case 0xa7:
		d->bad = true;
		return;
	default:
		/* 0d 10-1f 28-2f 51-6f 74-76 7c 7d 7f c3 d0-fe: no
		 * general-purpose register written. */
		legacy_modrm(d);
		return;
	}
}

/* The opcode and operands after a VEX (evex false) or EVEX prefix. */
static void vex_body(struct dec *d, unsigned map, bool evex, bool r, bool x, bool b)
{
	uint8_t op = byte(d);
	int w = d->vw ? W_64 : W_32;

	if (map == 1 && op == 0x77 && !evex)
		return; /* vzeroupper, vzeroall */
	modrm(d, r, x, b);
	if (map == 3 || (map == 1 && ((op >= 0x70 && op <= 0x73) || op == 0xc2 ||
				      (op >= 0xc4 && op <= 0xc6))))
		imm(d, 1);
	uint16_t v = (uint16_t)(1u << d->vvvv);
	if (map == 1 || map == 5) {
		if (op == 0x7e && d->pp == 1 && d->mod == 3)
			dst(d, d->rm, DST_FIXED, w, 0, 0);
		else if ((op == 0x2c || op == 0x2d || op == 0x78 || op == 0x79) && d->pp >= 2)
			dst(d, d->reg, DST_FIXED, w, 0, 0);
		else if (map == 1 && (op == 0x50 || op == 0xd7 || op == 0xc5 || (op == 0x93 && !evex)))
			dst(d, d->reg, DST_FIXED, W_32, 0, 0);
	} else if (map == 3) {
		if (op >= 0x14 && op <= 0x17 && d->mod == 3)
			dst(d, d->rm, DST_FIXED, w, 0, 0);
		else if (op == 0xf0 && !evex) /* rorx */
			dst(d, d->reg, DST_FROM, w, esrc_v(d), 0);
	} else if (map == 2 && !evex) { /* BMI1, BMI2 */
		if (op == 0xf2 || op == 0xf5 || op == 0xf7)
			dst(d, d->reg, DST_FROM, w, (uint16_t)(v | esrc_v(d)), 0);
		else if (op == 0xf3 && d->reg3 >= 1 && d->reg3 <= 3)
			dst(d, d->vvvv, DST_FROM, w, esrc_v(d), 0);
		else if (op == 0xf6 && d->pp == 3) { /* mulx */
			dst(d, d->reg, DST_FROM, w, (uint16_t)(1u << INSN_RDX | esrc_v(d)), 0);
			dst(d, d->vvvv, DST_FROM, w, (uint16_t)(1u << INSN_RDX | esrc_v(d)), 0);
		}
	}
}

int mpk__insn_decode(const uint8_t *b, size_t avail, struct insn *in)
{
	struct dec d = { .b = b, .avail = avail, .in = in };
	uint8_t op;

	memset(in, 0, sizeof(*in));
	in->flow = FLOW_NEXT;
	for (;;) {
		op = byte(&d);
		if (d.bad)
			return 0;
		if (op == 0x66)
			d.opsize = true;
		else if (op == 0x67)
			d.adsize = true;
		else if (op == 0xf2)
			d.rep2 = true, d.rep3 = false;
		else if (op == 0xf3)
			d.rep3 = true, d.rep2 = false;
		else if (op == 0xf0 || op == 0x2e || op == 0x36 || op == 0x3e || op == 0x26 ||
			 op == 0x64 || op == 0x65)
			;
		else if (op >= 0x40 && op <= 0x4f) {
			d.rex = op; /* counts only right before the opcode */
			continue;
		} else
			break;
		d.rex = 0;
	}
	if (op == 0x0f) {
		two_byte(&d, byte(&d));
	} else if (op == 0xc4 || op == 0xc5 || op == 0x62) {
		if (d.rex || d.opsize || d.rep2 || d.rep3)
			return 0; /* #UD */
		uint8_t p1 = byte(&d), p2 = op == 0xc5 ? p1 : byte(&d), map;
		bool r = !(p1 & 0x80), x = false, bb = false;
		if (op == 0xc5) {
			map = 1;
		} else {
			x = !(p1 & 0x40);
			bb = !(p1 & 0x20);
			map = op == 0xc4 ? p1 & 0x1f : p1 & 7;
		}
		d.vw = op != 0xc5 && (p2 & 0x80);
		d.vvvv = (uint8_t)(~p2 >> 3 & 15);
		d.pp = p2 & 3;
		if (op == 0x62) {
			uint8_t p3 = byte(&d);
			(void)p3;
			if (!(p2 & 4) || (p1 & 8) || map == 0 || map == 4 || map == 7)
				return 0;
		} else if (map < 1 || map > 3) {
			return 0;
		}
		vex_body(&d, map, op == 0x62, r, x, bb);
	} else {
		one_byte(&d, op);
	}
	if (d.bad || d.i > MAX_LEN)
		return 0;
	in->len = (uint8_t)d.i;
	if (in->has_target)
		in->target += (int64_t)d.i; /* relative to the end, made relative to the start */
	return (int)d.i;
}
