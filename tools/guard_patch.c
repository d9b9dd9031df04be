/* SPDX-License-Identifier: MIT */
/*
 * Sending a guarded library's exports to the gate (docs/guard.md,
 * "Patching the exported entry points"): a 5-byte jmp over the first
 * instructions, decoded with mpkit's own decoder (src/shared/insn.c),
 * which are copied, RIP-relative operands recomputed, to a trampoline
 * that jumps back.  A jmp rel32 and a RIP-relative disp32 reach 2 GiB:
 * stubs and trampolines share one mapping placed next to the library.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "guard.h"
#include "procmaps.h"
#include "insn.h"

#define NEAR_SIZE (1u << 20) /* 104 bytes a function at most: 10,000 */
#define NEAR_FN 104
#define JMP_LEN 5

static uint8_t *near_lo, *near_next;

/* Whether a mapping at a reaches every byte of [text_lo, text_hi) and back
 * with a rel32. */
static bool in_reach(uintptr_t a, uintptr_t text_lo, uintptr_t text_hi)
{
	return (a < text_lo ? text_hi - a : a + NEAR_SIZE - text_lo) <= 0x7fff0000u;
}

/* The free gap of the address space nearest the library that fits the
 * mapping within reach (a plain hint would do where nothing else is near,
 * but a drop-in allocator's reservations, `mpkit run`'s, fill the
 * space around libraries): its address, or 0. */
static uintptr_t near_gap(uintptr_t text_lo, uintptr_t text_hi)
{
	struct mpk_procmaps pm;
	struct mpk_procmaps_vma v;
	uintptr_t best = 0, best_d = UINTPTR_MAX, prev = 1u << 20;

	if (mpk_procmaps_open(&pm, NULL, NULL))
		return 0;
	while (mpk_procmaps_next(&pm, &v) > 0) {
		uintptr_t lo = prev, hi = (uintptr_t)v.lo;
		prev = (uintptr_t)v.hi;
		if (hi < lo || hi - lo < NEAR_SIZE)
			continue;
		/* The end of the gap nearest the library. */
		uintptr_t a = hi <= text_lo ? hi - NEAR_SIZE : lo;
		uintptr_t d = a < text_lo ? text_lo - a : a - text_lo;
		if (in_reach(a, text_lo, text_hi) && d < best_d)
			best = a, best_d = d;
	}
	mpk_procmaps_close(&pm);
	return best;
}

int guard_patch_begin(uintptr_t text_lo, uintptr_t text_hi)
{
	uintptr_t at = near_gap(text_lo, text_hi);
	void *m = MAP_FAILED;

	/* NOREPLACE: a gap taken since the maps were read is not clobbered. */
	if (at)
		m = mmap((void *)at, NEAR_SIZE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (m == MAP_FAILED) /* before Linux 4.17, or no gap found: a hint below the library */
		m = mmap((void *)((text_lo & ~(uintptr_t)0xfffff) - NEAR_SIZE - (16u << 20)), NEAR_SIZE,
			 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -1;
	if (!in_reach((uintptr_t)m, text_lo, text_hi)) {
		munmap(m, NEAR_SIZE);
		errno = ENOMEM;
		return -1;
	}
	/* The library's text, for the stubs' test (guard_patch()). */
	uintptr_t range[2] = { text_lo, text_hi - text_lo };
	memcpy(m, range, sizeof(range));
	near_lo = m;
	near_next = near_lo + sizeof(range);
	return 0;
}

int guard_patch_end(void)
{
	return mprotect(near_lo, NEAR_SIZE, PROT_READ | PROT_EXEC);
}

static void put_rel32(uint8_t *at, const uint8_t *from_end, const uint8_t *to)
{
	int32_t r = (int32_t)(to - from_end);
	memcpy(at, &r, 4);
}

/* A direct branch copied to rest: its rel32 form aimed at the same
 * target (jcc rel8 -> 0f 8x rel32, jmp rel8 -> e9, call e8 kept): the
 * bytes written, or 0 if it has no such form (loop, jrcxz, xbegin). */
static size_t move_branch(const struct insn *in, const uint8_t *at, uint8_t *to)
{
	const uint8_t *target = at + in->target;
	size_t n;

	if (in->map == 0 && in->op >= 0x70 && in->op <= 0x7f)
		to[0] = 0x0f, to[1] = (uint8_t)(0x80 + (in->op - 0x70)), n = 6;
	else if (in->map == 1 && in->op >= 0x80 && in->op <= 0x8f)
		to[0] = 0x0f, to[1] = in->op, n = 6;
	else if (in->map == 0 && (in->op == 0xeb || in->op == 0xe9))
		to[0] = 0xe9, n = 5;
	else if (in->map == 0 && in->op == 0xe8)
		to[0] = 0xe8, n = 5;
	else
		return 0;
	int64_t rel = target - (to + n);
	if (rel != (int32_t)rel)
		return 0;
	put_rel32(to + n - 4, to + n, target);
	return n;
}

/* A call that ends the displaced instructions (its next one lies past
 * the patch, intact) returns there, not into rest: its return address
 * pushed by hand (push imm32, movl to the upper half), then a jump to
 * its target.  The callee's caller is then the function's own code,
 * which its FDE describes, so that an exception or a cancellation out of
 * a callback called first thing crosses it (docs/guard.md,
 * "Unwinding"); rest has no unwind information.  Direct calls, and
 * indirect ones through a register or RIP-relative memory (one through
 * the stack pointer would see it moved): the bytes written, or 0 for
 * the plain copy, whose return is into rest. */
static size_t move_call(const struct insn *in, const uint8_t *at, size_t len, uint8_t *to)
{
	uint64_t back = (uint64_t)(uintptr_t)(at + len);
	uint32_t lo = (uint32_t)back, hi = (uint32_t)(back >> 32);
	int direct = in->map == 0 && in->op == 0xe8 && in->has_target;
	int indirect = in->map == 0 && in->op == 0xff && (in->reg & 7) == 2 && (in->mod == 3 || in->riprel);
	size_t o = 13;

	if (!direct && !indirect)
		return 0;
	to[0] = 0x68; /* push $lo */
	memcpy(to + 1, &lo, 4);
	to[5] = 0xc7, to[6] = 0x44, to[7] = 0x24, to[8] = 0x04; /* movl $hi, 4(%rsp) */
	memcpy(to + 9, &hi, 4);
	if (direct) {
		const uint8_t *target = at + in->target;
		int64_t rel = target - (to + o + 5);
		if (rel != (int32_t)rel)
			return 0;
		to[o] = 0xe9;
		put_rel32(to + o + 1, to + o + 5, target);
		return o + 5;
	}
	/* ff /2 -> ff /4: ModRM last for a register, before disp32 for
	 * RIP-relative (no immediate either way) */
	size_t m = in->mod == 3 ? len - 1 : len - 5;
	memcpy(to + o, at, len);
	to[o + m] = (uint8_t)((to[o + m] & ~0x38) | 0x20);
	if (in->riprel) {
		int32_t disp;
		memcpy(&disp, at + len - 4, 4);
		int64_t moved = (int64_t)disp + (at - (to + o));
		if (moved != (int32_t)moved)
			return 0;
		disp = (int32_t)moved;
		memcpy(to + o + len - 4, &disp, 4);
	}
	return o + len;
}

/* Copy fn's first instructions (JMP_LEN bytes at least) to rest: how
 * many bytes of fn they are (*out: how many of rest), or 0 with *why. */
static size_t displace(const uint8_t *fn, size_t size, uint8_t *rest, size_t *out, const char **why)
{
	size_t n = 0, o = 0, ntargets = 0;
	int64_t targets[JMP_LEN];

	while (n < JMP_LEN) {
		struct insn in;
		int len = n < size ? mpk__insn_decode(fn + n, size - n, &in) : 0;
		if (!len) {
			*why = n < size ? "its first instructions cannot be decoded" : "shorter than a jump (5 bytes)";
			return 0;
		}
		size_t c = in.flow == FLOW_CALL && n + (size_t)len >= JMP_LEN ? move_call(&in, fn + n, (size_t)len, rest + o) : 0;
		if (c) {
			if (in.has_target)
				targets[ntargets++] = (int64_t)n + in.target;
			n += (size_t)len, o += c;
			continue;
		}
		if (in.has_target) {
			size_t w = move_branch(&in, fn + n, rest + o);
			targets[ntargets++] = (int64_t)n + in.target;
			if (!w) {
				*why = "a branch in its first 5 bytes that cannot be moved";
				return 0;
			}
			n += (size_t)len, o += w;
			continue;
		}
		if (in.flow == FLOW_JUMP || in.flow == FLOW_STOP) {
			*why = "a return or computed jump in its first 5 bytes";
			return 0;
		}
		memcpy(rest + o, fn + n, (size_t)len);
		if (in.riprel) {
			/* disp32 comes last but for the immediate */
			size_t at = (size_t)len - in.imm_n - 4;
			int32_t disp;
			memcpy(&disp, fn + n + at, 4);
			int64_t moved = (int64_t)disp + (fn + n - (rest + o));
			if (disp != in.disp || moved != (int32_t)moved) {
				*why = "a RIP-relative operand out of reach";
				return 0;
			}
			disp = (int32_t)moved;
			memcpy(rest + o + at, &disp, 4);
		}
		n += (size_t)len, o += (size_t)len;
	}
	/* a branch into the instructions moved would land in the copy's old
	 * place, now the jmp */
	for (size_t k = 0; k < ntargets; k++)
		if (targets[k] > 0 && targets[k] < (int64_t)n) {
			*why = "a branch in its first 5 bytes into its first 5 bytes";
			return 0;
		}
	*out = o;
	return n;
}

/* A jump from outside into the bytes the patch overwrites would land
 * inside the jmp: any direct branch of the function into (fn, fn+5). */
static int branches_into_patch(const uint8_t *fn, size_t size)
{
	for (size_t n = 0; n < size;) {
		struct insn in;
		int len = mpk__insn_decode(fn + n, size - n, &in);
		if (!len)
			return 1; /* data in the code, or a decoder gap: not sure */
		if (in.has_target) {
			int64_t t = (int64_t)n + in.target;
			if (t > 0 && t < JMP_LEN)
				return 1;
		}
		n += (size_t)len;
	}
	return 0;
}

const struct guard_fn *guard_patch(struct guard_lib *l, const char *name, int hands_out, uint8_t *fn, size_t size,
				   const char **why)
{
	uint8_t *rest = near_next;

	if (size < JMP_LEN) {
		*why = "shorter than a jump (5 bytes)";
		return NULL;
	}
	if (near_next + NEAR_FN > near_lo + NEAR_SIZE) {
		*why = "no room left for gates";
		return NULL;
	}
	if (branches_into_patch(fn, size)) {
		*why = "a branch into its first 5 bytes, or code the decoder does not know";
		return NULL;
	}
	size_t o, n = displace(fn, size, rest, &o, why);
	if (!n)
		return NULL;
	struct guard_fn *g = malloc(sizeof(*g));
	if (!g) {
		*why = "out of memory";
		return NULL;
	}
	g->name = name;
	g->lib = l;
	g->rest = rest;
	g->hands_out = hands_out;
	/* Never freed, as the stubs that point at it are never unmapped: a
	 * list from a global, which a leak checker sees (the stubs' code it
	 * does not scan). */
	static struct guard_fn *every;
	g->next = every;
	every = g;
	/* rest: the displaced instructions, jmp fn+n */
	uint8_t *j = rest + o;
	j[0] = 0xe9;
	put_rel32(j + 1, j + 5, fn + n);
	/* stub: a call from the library's own text (its return address
	 * there) goes straight to rest, as its PLT calls do
	 * (guard_preload.c): its thread is inside already, and a caller
	 * that fakes the address gains nothing, the gate opening nothing
	 * then.  The rest go to the gate: %r11 is free at a call.
	 *   mov (%rsp), %r11; sub lo(%rip), %r11; cmp len(%rip), %r11
	 *   jb rest; movabs $g, %r11; jmp *guard_gate(%rip) */
	uint8_t *stub = j + 5, *k = stub;
	void *gate = (void *)guard_gate;
	memcpy(k, "\x4c\x8b\x1c\x24", 4), k += 4;
	memcpy(k, "\x4c\x2b\x1d", 3), put_rel32(k + 3, k + 7, near_lo), k += 7;
	memcpy(k, "\x4c\x3b\x1d", 3), put_rel32(k + 3, k + 7, near_lo + 8), k += 7;
	memcpy(k, "\x0f\x82", 2), put_rel32(k + 2, k + 6, rest), k += 6;
	k[0] = 0x49, k[1] = 0xbb;
	memcpy(k + 2, &g, 8), k += 10;
	k[0] = 0xff, k[1] = 0x25;
	memset(k + 2, 0, 4);
	memcpy(k + 6, &gate, 8);
	near_next = k + 14;
	if (near_next > rest + NEAR_FN)
		abort(); /* displace() wrote more than NEAR_FN allows for */

	uintptr_t pg = (uintptr_t)fn & ~(uintptr_t)4095, end = ((uintptr_t)fn + JMP_LEN + 4095) & ~(uintptr_t)4095;
	if (mprotect((void *)pg, end - pg, PROT_READ | PROT_WRITE | PROT_EXEC)) {
		*why = "its text cannot be made writable";
		return NULL;
	}
	uint8_t jmp[JMP_LEN] = { 0xe9 };
	put_rel32(jmp + 1, fn + JMP_LEN, stub);
	memcpy(fn, jmp, JMP_LEN);
	if (mprotect((void *)pg, end - pg, PROT_READ | PROT_EXEC)) {
		*why = "its text cannot be made read-only again";
		return NULL;
	}
	return g;
}
