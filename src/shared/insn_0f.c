/* SPDX-License-Identifier: MIT */
/*
 * x86-64 decoding, the two- and three-byte opcode maps (0f xx, 0f 38 xx,
 * 0f 3a xx): lengths and register effects as insn.c says.
 */
#include "insn_dec.h"

/* Two-byte map (0f xx); three-byte maps 0f 38 and 0f 3a. */
void mpk__insn_two_byte(struct dec *d, uint8_t op)
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
	case 0x20: case 0x21: case 0x22: case 0x23: /* mov to/from CR, DR: mod is ignored */
		byte(d);
		flow(d, FLOW_STOP, false, 0);
		return;
	case 0x78: case 0x79: case 0xb9: case 0xff:
		legacy_modrm(d);
		if (op <= 0x79 && (d->opsize || d->rep2)) {
			/* AMD's SSE4a: extrq, insertq (0f 78: two immediates) */
			if (op == 0x78) {
				imm(d, 1);
				imm(d, 1);
			}
			return;
		}
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
