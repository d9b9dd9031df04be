/* SPDX-License-Identifier: MIT */
/*
 * x86-64 instruction decoding for the gadget scan's classes (scan.c): the
 * length of the instruction at a byte, where control goes after it, and
 * what it does to the general-purpose registers, as far as "where does the
 * value in this register come from" needs.  Plain C over bytes, so `mpkit
 * scan` reads x86-64 files on any host.  Not installed.
 */
#ifndef MPK_INSN_H
#define MPK_INSN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Registers by their encoding number: rax 0, rcx 1, rdx 2, rbx 3, rsp 4,
 * rbp 5, rsi 6, rdi 7, r8..r15 8..15; masks are 1 << number. */
enum { INSN_RAX, INSN_RCX, INSN_RDX, INSN_RBX, INSN_RSP, INSN_RBP, INSN_RSI, INSN_RDI };

/* Where execution goes after the instruction. */
enum insn_flow {
	FLOW_NEXT,   /* the next instruction */
	FLOW_COND,   /* the next one or the target (jcc, loop, xbegin) */
	FLOW_CALL,   /* a call: the next one once the callee returns */
	FLOW_JUMP,   /* elsewhere only (jmp, ret) */
	FLOW_STOP,   /* nowhere: it faults or traps (ud2, int3, hlt, privileged) */
};

/* How a register gets its new value. */
enum insn_kind {
	DST_CONST,  /* imm (sign- or zero-extended to the width written) */
	DST_FIXED,  /* not from registers: memory at a fixed address, the
		     * kernel, the CPU (RDPKRU, CPUID), vector registers */
	DST_FROM,   /* a function of the registers in src */
	DST_COPY,   /* a copy of register src_reg (src = 1 << src_reg) */
	DST_AND,    /* its own value AND imm */
	DST_OR,     /* its own value OR imm */
	DST_ZX8,    /* zero-extended from 8 bits of the registers in src */
};

/* Which bits a write covers: 8-bit writes to AH..BH are bits 8..15. */
enum insn_width { W_8L, W_8H, W_16, W_32, W_64 };

struct insn_dst {
	uint8_t reg, kind, width, src_reg;
	uint16_t src;
	uint64_t imm;
};

#define INSN_DST_MAX 4

struct insn {
	uint8_t len;
	uint8_t flow;          /* enum insn_flow */
	bool has_target;       /* a direct branch or call: target is set */
	int64_t target;        /* relative to the instruction's first byte */
	uint8_t ndst;
	struct insn_dst dst[INSN_DST_MAX];
	/* It reads the memory operand it writes (add/inc/xchg/cmpxchg...
	 * to memory): the CPU reports its fault as a write only (watch.c). */
	bool mem_rmw;
	/* The operands, for the scan's classes (scan_class.c): the opcode in
	 * its map (0 one-byte, 1 0f, 2 0f 38, 3 0f 3a; VEX/EVEX 0x10 | map),
	 * ModRM's fields with REX applied, the memory operand's address
	 * (base and index -1 when absent; RIP-relative: riprel, disp from the
	 * end of the instruction), the last immediate, and the prefixes. */
	uint8_t map, op, modrm, mod, reg, rm, vvvv, pp, rex;
	bool opsize, rep2, rep3, lock, fsgs, mem, riprel;
	int8_t base, index;
	uint8_t scale, imm_n;
	int64_t disp, imm;
};

/* Decode the instruction at b (avail readable bytes): its length, or 0 if
 * the bytes are not a valid user-mode instruction or run past avail. */
int mpk__insn_decode(const uint8_t *b, size_t avail, struct insn *in);

#endif
