/* SPDX-License-Identifier: MIT */
/*
 * x86-64 decoding for the scan's classes (see insn.h).  Lengths follow the
 * opcode maps of the Intel SDM volume 2 (appendix A) in 64-bit mode: legacy
 * prefixes, REX, the one-, two- and three-byte maps, VEX and EVEX.  Register
 * effects are modelled for every instruction that writes a general-purpose
 * register; vector instructions write none, except the few that move a
 * value into one (taken as DST_FIXED: vector registers are not followed).
 * Instructions that fault in user mode (privileged, in/out without ioperm,
 * ud2) end the flow: no path runs through them.  Here: the legacy and
 * one-byte map, VEX/EVEX and the entry point; the two- and three-byte maps
 * are insn_0f.c's, the decoder's state and operand helpers insn_dec.h's.
 */
#include <string.h>

#include "insn_dec.h"

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
	case 0x68: /* REX.W overrides 66: a 32-bit immediate */
		imm(d, opw(d) == W_16 ? 2 : 4);
		dst(d, INSN_RSP, DST_FROM, W_64, 1u << INSN_RSP, 0);
		return;
	case 0x6a:
		imm(d, 1);
		dst(d, INSN_RSP, DST_FROM, W_64, 1u << INSN_RSP, 0);
		return;
	case 0x69: case 0x6b: /* imul r, r/m, imm */
		legacy_modrm(d);
		imm(d, op == 0x6b ? 1 : opw(d) == W_16 ? 2 : 4);
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
		imm(d, opw(d) == W_16 ? 2 : 4);
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
				flow(d, FLOW_COND, true, imm(d, opw(d) == W_16 ? 2 : 4));
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

/* Whether op (two: after 0f), with a memory ModRM operand, reads that
 * operand and writes it back: the integer read-modify-write forms. */
static bool mem_rmw(const struct dec *d, bool two, uint8_t op)
{
	unsigned r = d->reg3;

	if (d->mod == 3)
		return false;
	if (two) /* shld shrd bts btr btc bt?-imm cmpxchg xadd cmpxchg8b/16b */
		return op == 0xa4 || op == 0xa5 || op == 0xab || op == 0xac || op == 0xad ||
		       op == 0xb0 || op == 0xb1 || op == 0xb3 || op == 0xbb || (op == 0xba && r >= 5) ||
		       op == 0xc0 || op == 0xc1 || (op == 0xc7 && r == 1);
	if (op < 0x40) /* add or adc sbb and sub xor to E; not cmp */
		return (op & 7) < 2 && op >> 3 != 7;
	switch (op) {
	case 0x80: case 0x81: case 0x83: /* group 1 with an immediate; /7 cmp */
		return r != 7;
	case 0x86: case 0x87: /* xchg */
	case 0xc0: case 0xc1: case 0xd0: case 0xd1: case 0xd2: case 0xd3: /* shifts, rotates */
		return true;
	case 0xf6: case 0xf7: /* not, neg */
		return r == 2 || r == 3;
	case 0xfe: case 0xff: /* inc, dec */
		return r <= 1;
	default:
		return false;
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
		else if (op == 0xf0)
			in->lock = true;
		else if (op == 0x64 || op == 0x65)
			in->fsgs = true;
		else if (op == 0x2e || op == 0x36 || op == 0x3e || op == 0x26)
			;
		else if (op >= 0x40 && op <= 0x4f) {
			d.rex = op; /* counts only right before the opcode */
			continue;
		} else
			break;
		d.rex = 0;
	}
	in->opsize = d.opsize;
	in->rep2 = d.rep2;
	in->rep3 = d.rep3;
	in->rex = d.rex;
	in->op = op;
	if (op == 0x0f) {
		uint8_t op2 = byte(&d);
		in->map = op2 == 0x38 ? 2 : op2 == 0x3a ? 3 : 1;
		in->op = op2 == 0x38 || op2 == 0x3a ? (d.i < d.avail ? b[d.i] : 0) : op2;
		mpk__insn_two_byte(&d, op2);
		in->mem_rmw = mem_rmw(&d, true, op2);
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
		in->map = (uint8_t)(0x10 | map);
		in->vvvv = d.vvvv;
		in->pp = d.pp;
		in->op = d.i < d.avail ? b[d.i] : 0;
		vex_body(&d, map, op == 0x62, r, x, bb);
	} else {
		one_byte(&d, op);
		in->mem_rmw = mem_rmw(&d, false, op);
	}
	if (d.bad || d.i > MAX_LEN)
		return 0;
	in->len = (uint8_t)d.i;
	if (in->has_target)
		in->target += (int64_t)d.i; /* relative to the end, made relative to the start */
	return (int)d.i;
}
