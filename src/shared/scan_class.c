/* SPDX-License-Identifier: MIT */
/*
 * The classes of a WRPKRU or XRSTOR that is not one of mpkit's checked
 * sites (see scan.h).  The question is what an attacker who can only jump
 * (overwrite a return address or a function pointer, and write memory)
 * gets from it, as opposed to one who also sets registers (ROP).  ROP only
 * needs a proof; everything else is a gadget.
 *
 * From the site the search walks backwards over every way in: every
 * decoding of the bytes that ends on a point of the path (a jump can land
 * anywhere, also inside an instruction; a 66-prefixed jcc or call ends two
 * bytes early on AMD, so both ends count), every direct jmp, jcc, loop,
 * call and xbegin (its abort edge) of the range aimed at it, prefixed or
 * not, and every address of a point that the range's code makes itself
 * (lea from RIP, an immediate: push;ret, lea;jmp), where what the path
 * between made is not known.  It keeps what EAX, ECX and EDX at the site
 * are, as expressions of the registers and memory where the path starts
 * (scan_expr.h): instructions substitute what they write, stores and
 * loads through the same base register meet, and anything not modelled
 * here is X_OTHER, a value the path made.  Every point is also a start: a
 * jump can land there with whatever the registers hold.  At each one:
 *   WRPKRU: ECX or EDX non-zero there: the path faults (#GP), it ends; a
 *     bit of EAX that is 0 on every start (a key opened), or one that no
 *     choice of the start's registers and memory can make 1 when PKRU's is
 *     1 (the path's own value, RDPKRU with a mask...): a gadget;
 *   XRSTOR: bit 9 of EAX (PKRU in the requested-feature bitmap) 1 on every
 *     start: a gadget (the image in memory, which the attacker writes,
 *     gives PKRU); 0 on every start: that path cannot load PKRU, it ends;
 *     otherwise it must be one the start's registers choose.
 * A site is ROP only when every path ends or stays proven, within the
 * search's room; running out of room (depth, states, expression pool) is
 * gadget (unsure).  A WRPKRU or XRSTOR entered through a 66, F2, F3 or
 * LOCK prefix is #UD: those ways in are not paths.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "insn.h"
#include "scan.h"
#include "scan_expr.h"

#define DEPTH_MAX 64       /* instructions back from the site */
#define NODES_MAX 8192     /* states visited per site */
#define SEEN_BITS 14       /* hash table: twice NODES_MAX */
#define POOL_MAX 65536     /* expression nodes per site */
#define PKRU_BIT 9         /* PKRU's bit in XCR0 and the XSAVE bitmaps */
#define LOW32 0xffffffffull

/* Registers a call may change (SysV ABI): what the callee leaves there. */
#define CLOBBERED ((1u << INSN_RAX) | (1u << INSN_RCX) | (1u << INSN_RDX) | (1u << INSN_RSI) | \
		   (1u << INSN_RDI) | (0xfu << 8))

/* Direct branches (and address producers) of a range, by target: chained
 * in a hash table (head[] by target, next[] by entry). */
struct mpk_edges {
	uint32_t *from;
	int32_t *next, *head;
	size_t n, mask;
};

struct seen_key {
	uint32_t at;
	xid r[3];
};

struct room {
	struct xpool pool;
	uint32_t *gen;   /* substitution memo, by node: generation and result */
	xid *res;
	uint32_t g;
};

static bool rel8_branch(uint8_t b)
{
	return (b >= 0x70 && b <= 0x7f) || b == 0xeb || (b >= 0xe0 && b <= 0xe3);
}

/* The target of a jmp, call, jcc or xbegin with a 32-bit displacement at
 * i, if the bytes are one and it lies in the range: a rough byte match (the
 * decoder confirms each one when it is used). */
static inline bool rel32_target(const struct mpk_code *c, size_t i, uint32_t *to)
{
	const uint8_t *b = c->bytes + i;
	int64_t t;
	int32_t rel;

	if ((b[0] & 0xfe) != 0xe8 && b[0] != 0x0f && b[0] != 0xc7)
		return false; /* most bytes: the one test */
	if ((b[0] == 0xe8 || b[0] == 0xe9) && i + 5 <= c->len) {
		memcpy(&rel, b + 1, 4);
		t = (int64_t)i + 5 + rel;
	} else if (b[0] == 0x0f && i + 6 <= c->len && b[1] >= 0x80 && b[1] <= 0x8f) {
		memcpy(&rel, b + 2, 4);
		t = (int64_t)i + 6 + rel;
	} else if (b[0] == 0xc7 && i + 6 <= c->len && b[1] == 0xf8) {
		memcpy(&rel, b + 2, 4);
		t = (int64_t)i + 6 + rel;
	} else {
		return false;
	}
	if (t < 0 || (uint64_t)t >= c->len)
		return false;
	*to = (uint32_t)t;
	return true;
}

/* An address of the range that code at i makes (so a jmp or ret can go
 * there): lea from RIP, or an absolute immediate (push, mov). */
static inline bool producer_target(const struct mpk_code *c, size_t i, uint32_t *to)
{
	const uint8_t *b = c->bytes + i;
	int64_t t;
	int32_t v;

	if (b[0] == 0x8d && i + 6 <= c->len && (b[1] & 0xc7) == 0x05) {
		memcpy(&v, b + 2, 4);
		t = (int64_t)i + 6 + v;
	} else if ((b[0] == 0x68 || (b[0] >= 0xb8 && b[0] <= 0xbf)) && i + 5 <= c->len) {
		uint32_t u;
		memcpy(&u, b + 1, 4);
		t = (int64_t)u - (int64_t)c->addr;
	} else {
		return false;
	}
	if (t < 0 || (uint64_t)t >= c->len)
		return false;
	*to = (uint32_t)t;
	return true;
}

/* Whether the address the code at p makes reaches an indirect jmp, call
 * or ret on the instructions that follow it (in a register, or pushed):
 * q and in, that jump. */
static bool computed_jump(const struct mpk_code *c, uint32_t p, uint32_t *q, struct insn *in)
{
	uint32_t regs = 0, at;
	bool pushed = false;

	if (p > 0 && (c->bytes[p - 1] & 0xf0) == 0x40)
		p--; /* lea's REX prefix: its register */
	at = p;

	for (int k = 0; k < 16 && at < c->len; k++) {
		int len = mpk__insn_decode(c->bytes + at, c->len - at, in);
		if (!len)
			return false;
		if (at == p) { /* the producer */
			if (in->op == 0x68 && in->map == 0)
				pushed = true;
			else if (in->ndst)
				regs = 1u << in->dst[0].reg;
		} else if (in->map == 0 && in->op == 0xff && in->mod == 3 &&
			   ((in->reg & 7) == 2 || (in->reg & 7) == 4) && (regs >> in->rm & 1)) {
			*q = at;
			return true;
		} else if (in->map == 0 && (in->op == 0xc3 || in->op == 0xc2) && pushed) {
			*q = at;
			return true;
		} else if (in->map == 0 && in->op >= 0x50 && in->op <= 0x57 &&
			   (regs >> ((in->op & 7) | (in->rex & 1) << 3) & 1)) {
			pushed = true;
		} else {
			if (in->map == 0 && (in->op == 0x89 || in->op == 0x8b) && in->mod == 3) {
				unsigned from = in->op == 0x89 ? in->reg : in->rm, to = in->op == 0x89 ? in->rm : in->reg;
				if (regs >> from & 1) {
					regs |= 1u << to;
					goto next;
				}
			}
			for (unsigned i = 0; i < in->ndst; i++) {
				regs &= ~(1u << in->dst[i].reg);
				if (in->dst[i].reg == INSN_RSP)
					pushed = false;
			}
		}
		if (in->flow == FLOW_JUMP || in->flow == FLOW_STOP || in->flow == FLOW_CALL)
			return false;
next:
		at += (uint32_t)len;
	}
	return false;
}

static size_t slot(uint32_t to, size_t mask)
{
	return (size_t)((to * 0x9e3779b1u) & mask);
}

static struct mpk_edges *index_build(const struct mpk_code *c,
				     bool (*match)(const struct mpk_code *, size_t, uint32_t *))
{
	struct mpk_edges *e = calloc(1, sizeof(*e));
	size_t n = 0, size = 16;
	uint32_t to;

	if (!e)
		return NULL;
	for (size_t i = 0; i + 2 <= c->len; i++)
		n += match(c, i, &to);
	while (size < n)
		size *= 2;
	e->from = malloc((n + 1) * sizeof(*e->from));
	e->next = malloc((n + 1) * sizeof(*e->next));
	e->head = malloc(size * sizeof(*e->head));
	if (!e->from || !e->next || !e->head) {
		free(e->from);
		free(e->next);
		free(e->head);
		free(e);
		return NULL;
	}
	e->mask = size - 1;
	memset(e->head, -1, size * sizeof(*e->head));
	for (size_t i = 0; i + 2 <= c->len && e->n < n; i++) {
		if (!match(c, i, &to))
			continue;
		size_t h = slot(to, e->mask);
		e->from[e->n] = (uint32_t)i;
		e->next[e->n] = e->head[h];
		e->head[h] = (int32_t)e->n++;
	}
	return e;
}

static void index_free(struct mpk_edges *e)
{
	if (e) {
		free(e->from);
		free(e->next);
		free(e->head);
		free(e);
	}
}

static int edges_build(struct mpk_code *c)
{
	if (c->len > UINT32_MAX) {
		errno = EFBIG;
		return -1;
	}
	c->edges = index_build(c, rel32_target);
	c->producers = index_build(c, producer_target);
	if (!c->edges || !c->producers)
		return -1;
	return 0;
}

void mpk__scan_code_done(struct mpk_code *c)
{
	struct room *r = c->room;

	index_free(c->edges);
	index_free(c->producers);
	if (r) {
		mpk__xpool_free(&r->pool);
		free(r->gen);
		free(r->res);
		free(r);
	}
	free(c->queue);
	free(c->seen);
	c->edges = c->producers = NULL;
	c->room = NULL;
	c->queue = c->seen = NULL;
	c->edges_ready = false;
}

/* ------------------------------------------------------------------ */
/* What an instruction does, in expressions of the values before it.  */

struct effect {
	unsigned nreg;
	struct {
		uint8_t reg;
		xid val;
	} reg[6];
	bool store;            /* one store: ssize bytes of sval at saddr */
	xid saddr, sval;
	uint8_t ssize;
	bool clobber;          /* memory written where it is not known */
	bool dead;             /* the instruction faults: no path */
};

struct sem {
	struct xpool *p;
	const struct insn *in;
	size_t end;            /* offset of the next instruction */
	struct effect *e;
};

static xid X(struct sem *s, int op, xid a, xid b)
{
	return mpk__x(s->p, op, 0, a, b, 0);
}

static xid C(struct sem *s, uint64_t v)
{
	return mpk__xc(s->p, v);
}

static xid REG(struct sem *s, unsigned r)
{
	return mpk__x(s->p, X_REG, (int)r, 0, 0, 0);
}

static xid zx(struct sem *s, xid a, unsigned bits)
{
	return mpk__x(s->p, X_ZX, (int)bits, a, 0, 0);
}

static xid sx(struct sem *s, xid a, unsigned bits)
{
	return mpk__x(s->p, X_SX, (int)bits, a, 0, 0);
}

static void set(struct sem *s, unsigned reg, xid v)
{
	struct effect *e = s->e;
	for (unsigned i = 0; i < e->nreg; i++)
		if (e->reg[i].reg == reg) {
			e->reg[i].val = v;
			return;
		}
	if (e->nreg < 6) {
		e->reg[e->nreg].reg = (uint8_t)reg;
		e->reg[e->nreg++].val = v;
	}
}

/* An 8-bit register operand: AH..BH without REX are bits 8..15. */
static bool high8(const struct insn *in, unsigned r)
{
	return !in->rex && r >= 4 && r < 8;
}

static xid rd(struct sem *s, unsigned r, unsigned w)
{
	if (w == 8 && high8(s->in, r))
		return zx(s, X(s, X_SHR, REG(s, r - 4), C(s, 8)), 8);
	return zx(s, REG(s, r), w);
}

/* Write v (the low w bits count) to register r as an instruction of width
 * w does: 32 zero-extends, 8 and 16 keep the rest. */
static void wr(struct sem *s, unsigned r, unsigned w, xid v)
{
	if (w == 64) {
		set(s, r, v);
	} else if (w == 32) {
		set(s, r, zx(s, v, 32));
	} else if (w == 8 && high8(s->in, r)) {
		r -= 4;
		set(s, r, X(s, X_OR, X(s, X_AND, REG(s, r), C(s, ~0xff00ull)),
			    X(s, X_SHL, zx(s, v, 8), C(s, 8))));
	} else {
		uint64_t m = w == 8 ? 0xff : 0xffff;
		set(s, r, X(s, X_OR, X(s, X_AND, REG(s, r), C(s, ~m)), zx(s, v, w)));
	}
}

static xid address(struct sem *s)
{
	const struct insn *in = s->in;
	xid a;

	if (in->fsgs)
		return XID_OTHER; /* a segment base: not followed */
	if (in->riprel)
		return C(s, (uint64_t)((int64_t)s->end + in->disp));
	a = C(s, (uint64_t)in->disp);
	if (in->base >= 0)
		a = X(s, X_ADD, REG(s, (unsigned)in->base), a);
	if (in->index >= 0)
		a = X(s, X_ADD, X(s, X_MUL, REG(s, (unsigned)in->index), C(s, in->scale)), a);
	return a;
}

static xid load(struct sem *s, xid addr, unsigned bytes)
{
	return mpk__x(s->p, X_LOAD, (int)bytes, addr, 0, 0);
}

static void store(struct sem *s, xid addr, unsigned bytes, xid v)
{
	if (s->e->store) {
		s->e->clobber = true;
		return;
	}
	s->e->store = true;
	s->e->saddr = addr;
	s->e->ssize = (uint8_t)bytes;
	s->e->sval = v;
}

/* The E operand (ModRM r/m) of width w. */
static xid rd_e(struct sem *s, unsigned w)
{
	return s->in->mod == 3 ? rd(s, s->in->rm, w) : load(s, address(s), w / 8);
}

static void wr_e(struct sem *s, unsigned w, xid v)
{
	if (s->in->mod == 3)
		wr(s, s->in->rm, w, v);
	else
		store(s, address(s), w / 8, zx(s, v, w));
}

static unsigned opw(const struct insn *in)
{
	return in->rex & 8 ? 64 : in->opsize ? 16 : 32;
}

static xid carry(struct sem *s)
{
	return zx(s, XID_OTHER, 1);
}

/* add or adc sbb and sub xor cmp: the result of x op y (width w), or
 * nothing for cmp. */
static bool alu(struct sem *s, unsigned op, xid x, xid y, xid *out)
{
	static const int ops[] = { X_ADD, X_OR, X_ADD, X_SUB, X_AND, X_SUB, X_XOR };
	if (op == 7)
		return false;
	*out = X(s, ops[op], x, y);
	if (op == 2)
		*out = X(s, X_ADD, *out, carry(s));
	else if (op == 3)
		*out = X(s, X_SUB, *out, carry(s));
	return true;
}

static xid shifted(struct sem *s, unsigned kind, xid x, xid cnt, unsigned w, bool *ok)
{
	unsigned m = w == 64 ? 63 : 31;
	xid c = X(s, X_AND, cnt, C(s, m));
	*ok = true;
	switch (kind) {
	case 4: case 6: return X(s, X_SHL, zx(s, x, w), c);
	case 5: return X(s, X_SHR, zx(s, x, w), c);
	case 7: return X(s, X_SAR, sx(s, x, w), c);
	default: { /* rol, ror by a constant count; rcl, rcr: not followed */
		uint64_t k;
		xid kc = X(s, X_AND, cnt, C(s, m));
		if (kind > 1 || s->p->n[kc].op != X_CONST || (w != 32 && w != 64)) {
			*ok = false;
			return XID_OTHER;
		}
		k = s->p->n[kc].v % w;
		if (kind == 1)
			k = (w - k) % w;
		xid v = zx(s, x, w);
		return X(s, X_OR, X(s, X_SHL, v, C(s, k)), X(s, X_SHR, v, C(s, (w - k) % w ? w - k : 0)));
	}
	}
}

/* The one-byte map; false: not modelled here. */
static bool one_byte(struct sem *s)
{
	const struct insn *in = s->in;
	unsigned op = in->op, w = opw(in), r;
	xid v, rsp = REG(s, INSN_RSP);

	if (op < 0x40 && (op & 7) < 6) {
		unsigned aop = op >> 3, ww = op & 1 ? w : 8;
		if ((op & 7) == 0 || (op & 7) == 1) {
			if (alu(s, aop, rd_e(s, ww), rd(s, in->reg, ww), &v))
				wr_e(s, ww, v);
		} else if ((op & 7) == 2 || (op & 7) == 3) {
			if (alu(s, aop, rd(s, in->reg, ww), rd_e(s, ww), &v))
				wr(s, in->reg, ww, v);
		} else {
			ww = op & 1 ? w : 8;
			if (alu(s, aop, rd(s, INSN_RAX, ww), C(s, (uint64_t)in->imm), &v))
				wr(s, INSN_RAX, ww, v);
		}
		return true;
	}
	if (op >= 0x50 && op <= 0x57) {
		r = (op & 7) | (in->rex & 1) << 3;
		store(s, X(s, X_ADD, rsp, C(s, (uint64_t)-8)), 8, REG(s, r));
		set(s, INSN_RSP, X(s, X_ADD, rsp, C(s, (uint64_t)-8)));
		return true;
	}
	if (op >= 0x58 && op <= 0x5f) {
		r = (op & 7) | (in->rex & 1) << 3;
		set(s, INSN_RSP, X(s, X_ADD, rsp, C(s, 8)));
		set(s, r, load(s, rsp, 8));
		return true;
	}
	if (op >= 0x70 && op <= 0x7f)
		return true;
	if (op >= 0x91 && op <= 0x97) {
		r = (op & 7) | (in->rex & 1) << 3;
		wr(s, INSN_RAX, w, rd(s, r, w));
		wr(s, r, w, rd(s, INSN_RAX, w));
		return true;
	}
	if (op >= 0xb0 && op <= 0xb7) {
		wr(s, (op & 7) | (in->rex & 1) << 3, 8, C(s, (uint64_t)in->imm));
		return true;
	}
	if (op >= 0xb8 && op <= 0xbf) {
		wr(s, (op & 7) | (in->rex & 1) << 3, w, C(s, (uint64_t)in->imm));
		return true;
	}
	switch (op) {
	case 0x63:
		wr(s, in->reg, w, w == 64 ? sx(s, rd_e(s, 32), 32) : rd_e(s, w));
		return true;
	case 0x68: case 0x6a: {
		unsigned n = w == 16 ? 2 : 8;
		store(s, X(s, X_ADD, rsp, C(s, (uint64_t)-(int64_t)n)), n, C(s, (uint64_t)in->imm));
		set(s, INSN_RSP, X(s, X_ADD, rsp, C(s, (uint64_t)-(int64_t)n)));
		return true;
	}
	case 0x69: case 0x6b:
		wr(s, in->reg, w, X(s, X_MUL, rd_e(s, w), C(s, (uint64_t)in->imm)));
		return true;
	case 0x80: case 0x81: case 0x83: {
		unsigned ww = op == 0x80 ? 8 : w;
		if (alu(s, in->reg & 7, rd_e(s, ww), C(s, (uint64_t)in->imm), &v))
			wr_e(s, ww, v);
		return true;
	}
	case 0x84: case 0x85: case 0x90: case 0x9b: case 0xa8: case 0xa9: case 0xf5: case 0xf8:
	case 0xf9: case 0xfc: case 0xfd:
		if (op == 0x90 && (in->rex & 1)) {
			wr(s, INSN_RAX, w, rd(s, 8, w));
			wr(s, 8, w, rd(s, INSN_RAX, w));
		}
		return true;
	case 0x86: case 0x87: {
		unsigned ww = op & 1 ? w : 8;
		xid e = rd_e(s, ww), g = rd(s, in->reg, ww);
		wr_e(s, ww, g);
		wr(s, in->reg, ww, e);
		return true;
	}
	case 0x88: case 0x89:
		wr_e(s, op & 1 ? w : 8, rd(s, in->reg, op & 1 ? w : 8));
		return true;
	case 0x8a: case 0x8b:
		wr(s, in->reg, op & 1 ? w : 8, rd_e(s, op & 1 ? w : 8));
		return true;
	case 0x8d:
		wr(s, in->reg, w, in->fsgs ? address(s) : address(s));
		return true;
	case 0x8f:
		if (in->mod == 3) {
			set(s, INSN_RSP, X(s, X_ADD, rsp, C(s, 8)));
			wr(s, in->rm, 64, load(s, rsp, 8));
			return true;
		}
		return false;
	case 0x98:
		if (w == 16)
			wr(s, INSN_RAX, 16, sx(s, rd(s, INSN_RAX, 8), 8));
		else if (w == 32)
			wr(s, INSN_RAX, 32, sx(s, rd(s, INSN_RAX, 16), 16));
		else
			wr(s, INSN_RAX, 64, sx(s, rd(s, INSN_RAX, 32), 32));
		return true;
	case 0x99:
		wr(s, INSN_RDX, w, X(s, X_SAR, sx(s, rd(s, INSN_RAX, w), w), C(s, 63)));
		return true;
	case 0x9c:
		store(s, X(s, X_ADD, rsp, C(s, (uint64_t)-8)), 8, XID_OTHER);
		set(s, INSN_RSP, X(s, X_ADD, rsp, C(s, (uint64_t)-8)));
		return true;
	case 0x9d:
		set(s, INSN_RSP, X(s, X_ADD, rsp, C(s, 8)));
		return true;
	case 0xc0: case 0xc1: case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
		unsigned ww = op & 1 ? w : 8;
		xid cnt = op <= 0xc1 ? C(s, (uint64_t)in->imm) : op <= 0xd1 ? C(s, 1) : rd(s, INSN_RCX, 8);
		bool ok;
		v = shifted(s, in->reg & 7, rd_e(s, ww), cnt, ww, &ok);
		if (!ok)
			return false;
		wr_e(s, ww, v);
		return true;
	}
	case 0xc6: case 0xc7:
		if (in->modrm == 0xf8)
			return true; /* xbegin, xabort: the abort edge is the search's */
		wr_e(s, op & 1 ? w : 8, C(s, (uint64_t)in->imm));
		return true;
	case 0xac: case 0xad: /* lods (one): a load through RSI, which moves */
		if (in->rep2 || in->rep3)
			return false;
		wr(s, INSN_RAX, op == 0xac ? 8 : w, load(s, REG(s, INSN_RSI), op == 0xac ? 1 : w / 8));
		set(s, INSN_RSI, XID_OTHER);
		return true;
	case 0xc9: /* leave */
		set(s, INSN_RSP, X(s, X_ADD, REG(s, INSN_RBP), C(s, 8)));
		set(s, INSN_RBP, load(s, REG(s, INSN_RBP), 8));
		return true;
	case 0xe0: case 0xe1: case 0xe2:
		set(s, INSN_RCX, X(s, X_ADD, REG(s, INSN_RCX), C(s, (uint64_t)-1)));
		return true;
	case 0xe3:
		return true;
	case 0xf6: case 0xf7: {
		unsigned ww = op & 1 ? w : 8, k = in->reg & 7;
		if (k <= 1)
			return true; /* test */
		if (k == 2 || k == 3) {
			wr_e(s, ww, X(s, k == 2 ? X_NOT : X_NEG, rd_e(s, ww), 0));
			return true;
		}
		if ((k == 4 || k == 5) && ww == 32) {
			xid prod = X(s, X_MUL, zx(s, rd(s, INSN_RAX, 32), 32), zx(s, rd_e(s, 32), 32));
			if (k == 5 && s->p->n[prod].op != X_CONST)
				return false; /* signed high half */
			wr(s, INSN_RAX, 32, prod);
			wr(s, INSN_RDX, 32, X(s, X_SHR, prod, C(s, 32)));
			return true;
		}
		return false;
	}
	case 0xfe: case 0xff: {
		unsigned ww = op == 0xfe ? 8 : w, k = in->reg & 7;
		if (k <= 1) {
			wr_e(s, ww, X(s, X_ADD, rd_e(s, ww), C(s, k ? ~0ull : 1)));
			return true;
		}
		if (k == 6 && op == 0xff) {
			store(s, X(s, X_ADD, rsp, C(s, (uint64_t)-8)), 8, rd_e(s, 64));
			set(s, INSN_RSP, X(s, X_ADD, rsp, C(s, (uint64_t)-8)));
			return true;
		}
		return false;
	}
	}
	return false;
}

static bool two_byte(struct sem *s)
{
	const struct insn *in = s->in;
	unsigned op = in->op, w = opw(in);
	xid v;

	if (op >= 0x80 && op <= 0x8f)
		return true;
	if (op >= 0x40 && op <= 0x4f) { /* cmov: either; 32 bits: zero-extended anyway */
		wr(s, in->reg, w, mpk__x(s->p, X_SEL, 0, rd(s, in->reg, w), rd_e(s, w), 0));
		return true;
	}
	if (op >= 0x90 && op <= 0x9f) {
		wr_e(s, 8, carry(s));
		return true;
	}
	if (op >= 0x18 && op <= 0x1f)
		return true; /* hints and nops: memory not touched */
	switch (op) {
	case 0x01:
		if (in->modrm == 0xee) { /* rdpkru: EDX is 0 after it */
			set(s, INSN_RAX, XID_PKRU);
			set(s, INSN_RDX, C(s, 0));
			return true;
		}
		return in->modrm == 0xef || in->modrm == 0xd5 || in->modrm == 0xd6 || in->modrm == 0xe8;
	case 0x05:
		set(s, INSN_RAX, XID_OTHER);
		set(s, INSN_RCX, XID_OTHER);
		set(s, 11, XID_OTHER);
		s->e->clobber = true; /* the kernel writes memory */
		return true;
	case 0xa3:
		return true;
	case 0xab: case 0xb3: case 0xbb: case 0xba: {
		unsigned k = op == 0xab ? 5 : op == 0xb3 ? 6 : op == 0xbb ? 7 : in->reg & 7;
		if (k == 4)
			return true; /* bt */
		if (k < 4 || in->mod != 3)
			return false;
		xid bit = X(s, X_SHL, C(s, 1), X(s, X_AND, op == 0xba ? C(s, (uint64_t)in->imm) : rd(s, in->reg, w),
					   C(s, w - 1)));
		xid x = rd_e(s, w);
		v = k == 5 ? X(s, X_OR, x, bit) : k == 6 ? X(s, X_AND, x, X(s, X_NOT, bit, 0)) : X(s, X_XOR, x, bit);
		wr_e(s, w, v);
		return true;
	}
	case 0xaf:
		wr(s, in->reg, w, X(s, X_MUL, rd(s, in->reg, w), rd_e(s, w)));
		return true;
	case 0xb6: case 0xb7:
		wr(s, in->reg, w, rd_e(s, op == 0xb6 ? 8 : 16));
		return true;
	case 0xbe: case 0xbf:
		wr(s, in->reg, w, sx(s, rd_e(s, op == 0xbe ? 8 : 16), op == 0xbe ? 8 : 16));
		return true;
	}
	return false;
}

/* VEX: the BMI instructions that compute from registers (andn, bzhi with
 * a constant index, shlx/shrx/sarx). */
static bool vex(struct sem *s)
{
	const struct insn *in = s->in;
	unsigned w = in->rex & 8 ? 64 : 32;

	if (in->map != 0x12 || in->mod != 3)
		return false;
	xid src = rd_e(s, w), vv = rd(s, in->vvvv, w);
	if (in->op == 0xf2 && in->pp == 0) { /* andn */
		wr(s, in->reg, w, X(s, X_AND, X(s, X_NOT, vv, 0), src));
		return true;
	}
	if (in->op == 0xf5 && in->pp == 0) { /* bzhi */
		xid n = zx(s, vv, 8);
		if (s->p->n[n].op != X_CONST)
			return false;
		uint64_t k = s->p->n[n].v;
		wr(s, in->reg, w, k >= w ? src : X(s, X_AND, src, C(s, (1ull << k) - 1)));
		return true;
	}
	if (in->op == 0xf7 && in->pp) { /* shlx sarx shrx */
		static const unsigned kind[] = { 0, 4, 7, 5 };
		bool ok;
		wr(s, in->reg, w, shifted(s, kind[in->pp], src, vv, w, &ok));
		return ok;
	}
	return false;
}

/* The effect of the instruction (decoded: in) at offset at.  Anything not
 * modelled writes X_OTHER to what the decoder says it writes, and any
 * memory operand it has. */
static void effect(struct xpool *p, const struct insn *in, size_t at, struct effect *e)
{
	struct sem s = { p, in, at + in->len, e };
	bool known;

	memset(e, 0, sizeof(*e));
	if (in->flow == FLOW_CALL) {
		for (unsigned r = 0; r < 16; r++)
			if (CLOBBERED & (1u << r))
				set(&s, r, XID_OTHER);
		e->clobber = true;
		return;
	}
	if (in->map == 0)
		known = one_byte(&s);
	else if (in->map == 1)
		known = two_byte(&s);
	else
		known = (in->map & 0x10) && vex(&s);
	if (known)
		return;
	memset(e, 0, sizeof(*e));
	for (unsigned i = 0; i < in->ndst; i++) {
		set(&s, in->dst[i].reg, XID_OTHER);
		/* stores without a memory operand: push forms and enter move
		 * RSP, movs and stos move RDI */
		if (in->dst[i].reg == INSN_RSP || in->dst[i].reg == INSN_RDI)
			e->clobber = true;
	}
	if (in->mem || (in->map == 0 && in->op == 0xcd)) /* int 0x80: the kernel writes */
		e->clobber = true;
}

/* ------------------------------------------------------------------ */
/* Substitution: an expression after the instruction, in terms of before. */

static void base_off(struct xpool *p, xid a, xid *base, uint64_t *off)
{
	const struct xnode *n = &p->n[a];
	if (n->op == X_CONST) {
		*base = XID_OTHER, *off = n->v;
	} else if (n->op == X_ADD && p->n[n->b].op == X_CONST) {
		*base = n->a, *off = p->n[n->b].v;
	} else {
		*base = a, *off = 0;
	}
}

static xid subst(struct room *rm, const struct effect *e, xid x)
{
	struct xpool *p = &rm->pool;
	const struct xnode n = p->n[x];
	xid r;

	if (rm->gen[x] == rm->g)
		return rm->res[x];
	switch (n.op) {
	case X_OTHER: case X_PKRU: case X_CONST:
		r = x;
		break;
	case X_REG:
		r = x;
		for (unsigned i = 0; i < e->nreg; i++)
			if (e->reg[i].reg == n.arg)
				r = e->reg[i].val;
		break;
	case X_LOAD: {
		xid a = subst(rm, e, n.a), b1, b2;
		uint64_t o1, o2;
		r = mpk__x(p, X_LOAD, n.arg, a, 0, 0);
		if (e->clobber) {
			r = XID_OTHER;
		} else if (e->store) {
			base_off(p, a, &b1, &o1);
			base_off(p, e->saddr, &b2, &o2);
			if (b1 != b2 || (b1 == XID_OTHER && p->n[a].op != X_CONST))
				r = XID_OTHER; /* may be the same memory */
			else if (o1 == o2 && n.arg == e->ssize)
				r = mpk__x(p, X_ZX, 8 * n.arg, e->sval, 0, 0);
			else if (!(o1 + n.arg <= o2 || o2 + e->ssize <= o1))
				r = XID_OTHER; /* part of it */
		}
		break;
	}
	default:
		r = mpk__x(p, n.op, n.arg, subst(rm, e, n.a), n.op >= X_ADD && n.op <= X_SAR ? subst(rm, e, n.b)
							       : n.op == X_SEL ? subst(rm, e, n.b) : 0, 0);
	}
	rm->gen[x] = rm->g;
	rm->res[x] = r;
	return r;
}

/* ------------------------------------------------------------------ */
/* The search. */

struct state {
	xid r[3]; /* EAX, ECX, EDX at the site */
};

struct node {
	uint32_t at;
	uint16_t depth;
	struct state st;
};

enum { V_ON, V_END, V_GADGET };

struct search {
	const struct mpk_code *c;
	struct room *rm;
	struct node *queue;
	size_t head, tail;
	struct seen_key *seen;
	int kind;
	bool full;
};


/* What the state says if the path starts here. */
static int verdict(struct search *s, const struct state *st)
{
	struct xpool *p = &s->rm->pool;
	const struct xval *v;

	if (p->full)
		return V_GADGET;
	if (s->kind == MPK_GADGET_XRSTOR) {
		v = mpk__x_eval(p, st->r[0]);
		uint64_t bit = 1ull << PKRU_BIT;
		if (v->k1 & bit)
			return V_GADGET;
		if (v->k0 & bit)
			return V_END;
		return v->c0 & bit ? V_ON : V_GADGET;
	}
	for (int i = 1; i < 3; i++)
		if (mpk__x_eval(p, st->r[i])->k1 & LOW32)
			return V_END; /* #GP: ECX and EDX must be 0 */
	v = mpk__x_eval(p, st->r[0]);
	if ((v->k0 & LOW32) || (~(v->k0 | v->k1) & LOW32 & ~v->p1))
		return V_GADGET;
	return mpk__x_has_input(p, st->r[0]) ? V_ON : V_END;
}

static bool push(struct search *s, uint32_t at, const struct state *st, unsigned depth)
{
	size_t mask = ((size_t)1 << SEEN_BITS) - 1;
	uint64_t k = ((uint64_t)at * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)st->r[0] * 0xff51afd7ed558ccdull) ^
		     ((uint64_t)st->r[1] << 21) ^ ((uint64_t)st->r[2] << 42);
	size_t h = (size_t)(k >> (64 - SEEN_BITS));

	for (; s->seen[h].at; h = (h + 1) & mask) {
		const struct seen_key *q = &s->seen[h];
		if (q->at == at + 1 && !memcmp(q->r, st->r, sizeof(q->r)))
			return true;
	}
	if (s->tail == NODES_MAX) {
		s->full = true;
		return false;
	}
	s->seen[h].at = at + 1;
	memcpy(s->seen[h].r, st->r, sizeof(st->r));
	s->queue[s->tail++] = (struct node){ at, (uint16_t)depth, *st };
	return true;
}

/* One way into node n: from the instruction in at p, with effect e. */
static int through(struct search *s, const struct node *n, uint32_t p, const struct effect *e)
{
	struct state st;

	if (e->dead)
		return V_END;
	s->rm->g++;
	for (int i = 0; i < 3; i++)
		st.r[i] = subst(s->rm, e, n->st.r[i]);
	int v = verdict(s, &st);
	if (v == V_ON && !push(s, p, &st, n->depth + 1u))
		return V_GADGET; /* out of room */
	return v;
}

static bool is_prefix(uint8_t b)
{
	return (b >= 0x40 && b <= 0x4f) || b == 0x66 || b == 0x67 || b == 0xf0 || b == 0xf2 ||
	       b == 0xf3 || b == 0x2e || b == 0x36 || b == 0x3e || b == 0x26 || b == 0x64 || b == 0x65;
}

/* Prefixes before WRPKRU or XRSTOR that make it #UD. */
static bool ud_prefix(uint8_t b)
{
	return b == 0x66 || b == 0xf0 || b == 0xf2 || b == 0xf3;
}

/* A branch at p (its opcode) that targets n: the ways in through it, from
 * its opcode and from every prefix before it. */
static int via_branch(struct search *s, const struct node *n, uint32_t p, bool edge)
{
	const struct mpk_code *c = s->c;
	struct insn in;
	struct effect e;

	for (uint32_t q = p; q + 14 >= p; q--) {
		if (q < p && !is_prefix(c->bytes[q]))
			break;
		if (mpk__insn_decode(c->bytes + q, c->len - q, &in) && in.has_target &&
		    (int64_t)q + in.target == (int64_t)n->at) {
			memset(&e, 0, sizeof(e));
			struct sem sm = { &s->rm->pool, &in, q + in.len, &e };
			if (in.flow == FLOW_CALL) { /* into the callee: the return address pushed */
				xid rsp = REG(&sm, INSN_RSP);
				store(&sm, X(&sm, X_ADD, rsp, C(&sm, (uint64_t)-8)), 8, C(&sm, q + in.len));
				set(&sm, INSN_RSP, X(&sm, X_ADD, rsp, C(&sm, (uint64_t)-8)));
			} else if (in.op == 0xc7 && in.map == 0) { /* xbegin's abort: EAX the status */
				set(&sm, INSN_RAX, XID_OTHER);
			} else if (in.map == 0 && in.op >= 0xe0 && in.op <= 0xe2) {
				set(&sm, INSN_RCX, X(&sm, X_ADD, REG(&sm, INSN_RCX), C(&sm, ~0ull)));
			}
			int r = through(s, n, q, &e);
			if (r == V_GADGET)
				return (int)q + 1;
		}
		if (q == 0)
			break;
	}
	(void)edge;
	return 0;
}

void mpk__scan_class(struct mpk_code *c, size_t off, int kind, struct mpk_class *out)
{
	struct search s = { .c = c, .kind = kind };
	struct insn in;
	struct effect e;
	struct room *rm;
	int g;

	memset(out, 0, sizeof(*out));
	out->cls = MPK_SITE_GADGET;
	out->unsure = true;
	if (!c->edges_ready) {
		c->edges_ready = true;
		c->edges_failed = edges_build(c) != 0;
	}
	if (!c->queue) {
		c->queue = malloc(NODES_MAX * sizeof(struct node));
		c->seen = calloc((size_t)1 << SEEN_BITS, sizeof(struct seen_key));
		rm = c->room = calloc(1, sizeof(*rm));
		if (rm && !mpk__xpool_init(&rm->pool, POOL_MAX)) {
			rm->gen = calloc(POOL_MAX, sizeof(*rm->gen));
			rm->res = malloc(POOL_MAX * sizeof(*rm->res));
		}
	}
	rm = c->room;
	s.queue = c->queue;
	s.seen = c->seen;
	s.rm = rm;
	if (!s.queue || !s.seen || !rm || !rm->pool.n || !rm->gen || !rm->res || c->edges_failed ||
	    off > UINT32_MAX)
		goto out;
	memset(s.seen, 0, ((size_t)1 << SEEN_BITS) * sizeof(*s.seen));
	mpk__xpool_reset(&rm->pool);
	memset(rm->gen, 0, POOL_MAX * sizeof(*rm->gen));
	rm->g = 0;

	struct state first;
	struct sem sm = { &rm->pool, NULL, 0, &e };
	first.r[0] = REG(&sm, INSN_RAX);
	first.r[1] = kind == MPK_GADGET_WRPKRU ? REG(&sm, INSN_RCX) : C(&sm, 0);
	first.r[2] = kind == MPK_GADGET_WRPKRU ? REG(&sm, INSN_RDX) : C(&sm, 0);
	/* Ways in: the opcode, and every prefix before it that leaves the
	 * instruction valid (REX.W: XRSTOR64; segments). */
	size_t start = off;
	for (;;) {
		push(&s, (uint32_t)start, &first, 0);
		if (start == 0 || off - start >= 14 || !is_prefix(c->bytes[start - 1]) ||
		    ud_prefix(c->bytes[start - 1]))
			break;
		start--;
	}
	while (s.head < s.tail) {
		struct node n = s.queue[s.head++];
		if (n.depth >= DEPTH_MAX) {
			out->from = n.at; /* the value still needs what comes before */
			s.full = true;
			goto found;
		}
		/* A jmp, call or ret to an address the range's code makes: a
		 * way in from that jump. */
		for (int32_t k = c->producers->head[slot(n.at, c->producers->mask)]; k >= 0;
		     k = c->producers->next[k]) {
			uint32_t p = c->producers->from[k], to, q;
			if (!producer_target(c, p, &to) || to != n.at || !computed_jump(c, p, &q, &in))
				continue;
			memset(&e, 0, sizeof(e));
			struct sem jm = { &rm->pool, &in, q + in.len, &e };
			xid rsp = REG(&jm, INSN_RSP);
			if (in.flow == FLOW_JUMP && in.op != 0xff) /* ret: the address popped */
				set(&jm, INSN_RSP, X(&jm, X_ADD, rsp, C(&jm, 8)));
			else if (in.flow == FLOW_CALL) {
				store(&jm, X(&jm, X_ADD, rsp, C(&jm, (uint64_t)-8)), 8, C(&jm, q + in.len));
				set(&jm, INSN_RSP, X(&jm, X_ADD, rsp, C(&jm, (uint64_t)-8)));
			}
			if (through(&s, &n, q, &e) == V_GADGET) {
				out->from = q;
				goto found;
			}
		}
		/* Fall-through: an instruction of any length ending here (a
		 * 66-prefixed jcc or call: also two bytes shorter, as AMD
		 * decodes it). */
		for (uint32_t len = 1; len <= 17 && len <= n.at; len++) {
			uint32_t p = n.at - len;
			int l = mpk__insn_decode(c->bytes + p, c->len - p, &in);
			if (!l || in.flow == FLOW_JUMP || in.flow == FLOW_STOP)
				continue;
			bool amd = in.opsize && in.has_target && !(in.rex & 8) &&
				   ((in.map == 1 && in.op >= 0x80 && in.op <= 0x8f) || (in.map == 0 && in.op == 0xe8));
			if (l != (int)len && !(amd && l - 2 == (int)len))
				continue;
			effect(&rm->pool, &in, p, &e);
			if (through(&s, &n, p, &e) == V_GADGET) {
				out->from = p;
				goto found;
			}
		}
		/* Branches, jumps and calls whose target is here: 8-bit
		 * displacements from up to 128 bytes around, 32-bit ones (and
		 * xbegin) from the index; each also entered at its prefixes. */
		for (uint32_t p = n.at > 129 ? n.at - 129 : 0; p + 2 <= c->len && p <= n.at + 126; p++) {
			if (!rel8_branch(c->bytes[p]) || (int64_t)p + 2 + (int8_t)c->bytes[p + 1] != n.at)
				continue;
			if ((g = via_branch(&s, &n, p, false))) {
				out->from = (size_t)g - 1;
				goto found;
			}
		}
		for (int32_t k = c->edges->head[slot(n.at, c->edges->mask)]; k >= 0; k = c->edges->next[k]) {
			if ((g = via_branch(&s, &n, c->edges->from[k], true))) {
				out->from = (size_t)g - 1;
				goto found;
			}
		}
		if (s.full || rm->pool.full) {
			s.full = true;
			goto found;
		}
	}
	out->cls = MPK_SITE_ROP;
	out->unsure = false;
	out->nodes = s.tail;
	return;
found:
	out->unsure = s.full;
out:
	out->nodes = s.tail;
}
