/* SPDX-License-Identifier: MIT */
/*
 * The values the scan's classifier (scan_class.c) follows backwards: an
 * expression over the registers and memory at a point of a path, kept in a
 * pool where equal expressions are one node (so a state is a few node
 * numbers), and what an expression can be once the path starts there.
 * Not installed.
 */
#ifndef MPK_SCAN_EXPR_H
#define MPK_SCAN_EXPR_H

#include <stdbool.h>
#include <stdint.h>

enum {
	X_OTHER,  /* anything: a value the path made that is not modelled */
	X_PKRU,   /* what RDPKRU reads (zero-extended) */
	X_CONST,  /* v */
	X_REG,    /* register arg, 64 bits, where the path starts */
	X_LOAD,   /* arg bytes at address a, zero-extended */
	X_ADD, X_SUB, X_AND, X_OR, X_XOR, X_MUL,
	X_SHL, X_SHR, X_SAR, /* a shifted by b (b < 64: the caller masks it) */
	X_NOT, X_NEG,
	X_ZX, X_SX,  /* a's low arg bits, zero- or sign-extended */
	X_SEL,    /* a or b (a conditional move: the flags choose) */
};

/* Node numbers: 0 is X_OTHER, 1 X_PKRU. */
typedef uint32_t xid;
#define XID_OTHER 0u
#define XID_PKRU 1u

struct xnode {
	uint8_t op, arg;
	xid a, b;
	uint64_t v;
};

/* What a value can be when the path starts where its registers and memory
 * are read, whatever they hold then (the attacker's, or the program's):
 *   k0, k1: bits that are 0, 1 on every start;
 *   c0, c1: bits that some choice of the start's registers and memory
 *           makes 0, 1, whatever the rest (PKRU, the path's other values);
 *   p1:     bits that some such choice makes 1 whenever PKRU's bit is 1;
 *   org:    which inputs it depends on (registers 0..15, 16 memory; all
 *           bits for X_OTHER): values with disjoint inputs vary apart;
 *   wlo..whi: bits that take every combination together (a bijection of
 *           some input's bits): sums and XORs keep it, where per-bit
 *           knowledge would not. */
struct xval {
	uint64_t k0, k1, c0, c1, p1, org;
	uint8_t wlo, whi;
};

struct xpool {
	struct xnode *n;
	uint32_t count, cap;
	xid *hash;          /* 2 * cap slots, 0 empty (node 0 is never hashed) */
	struct xval *val;   /* by node: its value, once worked out */
	uint8_t *have;
	bool full;          /* a node was refused: the answer is unsure */
};

int mpk__xpool_init(struct xpool *p, uint32_t cap);
void mpk__xpool_reset(struct xpool *p);
void mpk__xpool_free(struct xpool *p);

/* The node for op(a, b) with arg and v, simplified (constants folded,
 * x-x, x&0, x*0...).  XID_OTHER when the pool is full (p->full set). */
xid mpk__x(struct xpool *p, int op, int arg, xid a, xid b, uint64_t v);
static inline xid mpk__xc(struct xpool *p, uint64_t v)
{
	return mpk__x(p, X_CONST, 0, 0, 0, v);
}

/* Whether the expression reads the start's registers or memory. */
bool mpk__x_has_input(struct xpool *p, xid e);

/* Its value when the path starts here (see struct xval). */
const struct xval *mpk__x_eval(struct xpool *p, xid e);

#endif
