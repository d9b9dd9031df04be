/* SPDX-License-Identifier: MIT */
/*
 * The scan classifier's values (see scan_expr.h): expressions, shared in a
 * pool, and an abstract value for each one.  The abstract value is what a
 * "ROP only" answer rests on, so every rule below claims a bit can be
 * chosen (c0, c1, p1, the window) only where that follows for every value
 * of everything else; where a rule is not sure it claims nothing, and the
 * classifier then says gadget.
 */
#include <stdlib.h>
#include <string.h>

#include "scan_expr.h"

#define ALL (~0ull)
#define MEMORY_ORG (1ull << 16)

static uint64_t lowmask(unsigned n)
{
	return n >= 64 ? ALL : (1ull << n) - 1;
}

static bool binary(int op)
{
	return op >= X_ADD && op <= X_SAR ? true : op == X_SEL;
}

static bool commutes(int op)
{
	return op == X_ADD || op == X_AND || op == X_OR || op == X_XOR || op == X_MUL || op == X_SEL;
}

int mpk__xpool_init(struct xpool *p, uint32_t cap)
{
	memset(p, 0, sizeof(*p));
	p->cap = cap;
	p->n = malloc(cap * sizeof(*p->n));
	p->hash = malloc(2 * (size_t)cap * sizeof(*p->hash));
	p->val = malloc(cap * sizeof(*p->val));
	p->have = malloc(cap);
	if (!p->n || !p->hash || !p->val || !p->have) {
		mpk__xpool_free(p);
		return -1;
	}
	mpk__xpool_reset(p);
	return 0;
}

void mpk__xpool_reset(struct xpool *p)
{
	memset(p->hash, 0, 2 * (size_t)p->cap * sizeof(*p->hash));
	p->n[XID_OTHER] = (struct xnode){ .op = X_OTHER };
	p->n[XID_PKRU] = (struct xnode){ .op = X_PKRU };
	p->have[XID_OTHER] = p->have[XID_PKRU] = 0;
	p->count = 2;
	p->full = false;
}

void mpk__xpool_free(struct xpool *p)
{
	free(p->n);
	free(p->hash);
	free(p->val);
	free(p->have);
	memset(p, 0, sizeof(*p));
}

static uint64_t fold(int op, int arg, uint64_t a, uint64_t b)
{
	switch (op) {
	case X_ADD: return a + b;
	case X_SUB: return a - b;
	case X_AND: return a & b;
	case X_OR: return a | b;
	case X_XOR: return a ^ b;
	case X_MUL: return a * b;
	case X_SHL: return a << (b & 63);
	case X_SHR: return a >> (b & 63);
	case X_SAR: return (uint64_t)((int64_t)a >> (b & 63));
	case X_NOT: return ~a;
	case X_NEG: return -a;
	case X_ZX: return a & lowmask((unsigned)arg);
	case X_SX:
		if (arg >= 64)
			return a;
		return (a >> (arg - 1)) & 1 ? a | ~lowmask((unsigned)arg) : a & lowmask((unsigned)arg);
	default: return 0;
	}
}

static xid intern(struct xpool *p, int op, int arg, xid a, xid b, uint64_t v)
{
	uint64_t h = ((uint64_t)op * 0x100000001b3ull ^ (uint64_t)arg << 8 ^ (uint64_t)a << 16 ^
		      (uint64_t)b << 40 ^ v * 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull;
	size_t slots = 2 * (size_t)p->cap, i = (size_t)(h >> 17) % slots;

	for (; p->hash[i]; i = (i + 1) % slots) {
		const struct xnode *n = &p->n[p->hash[i]];
		if (n->op == op && n->arg == arg && n->a == a && n->b == b && n->v == v)
			return p->hash[i];
	}
	if (p->count == p->cap) {
		p->full = true;
		return XID_OTHER;
	}
	xid id = p->count++;
	p->n[id] = (struct xnode){ (uint8_t)op, (uint8_t)arg, a, b, v };
	p->have[id] = 0;
	p->hash[i] = id;
	return id;
}

static bool is_const(const struct xpool *p, xid e, uint64_t *v)
{
	if (p->n[e].op != X_CONST)
		return false;
	*v = p->n[e].v;
	return true;
}

xid mpk__x(struct xpool *p, int op, int arg, xid a, xid b, uint64_t v)
{
	uint64_t ca = 0, cb = 0;
	bool ka, kb;

	if (op == X_OTHER)
		return XID_OTHER;
	if (op == X_PKRU)
		return XID_PKRU;
	if (op == X_CONST || op == X_REG)
		return intern(p, op, op == X_REG ? arg : 0, 0, 0, op == X_CONST ? v : 0);
	if (op == X_LOAD)
		return intern(p, op, arg, a, 0, 0);
	if (!binary(op))
		b = 0;
	if (commutes(op) && (p->n[a].op == X_CONST || (p->n[b].op != X_CONST && a > b))) {
		xid t = a;
		a = b;
		b = t;
	}
	ka = is_const(p, a, &ca);
	kb = binary(op) && is_const(p, b, &cb);
	if (ka && (kb || !binary(op)))
		return mpk__xc(p, fold(op, arg, ca, cb));
	switch (op) {
	case X_ADD:
		if (kb && !cb)
			return a;
		if (a == b)
			return mpk__x(p, X_SHL, 0, a, mpk__xc(p, 1), 0);
		if (kb && p->n[a].op == X_ADD && is_const(p, p->n[a].b, &ca))
			return mpk__x(p, X_ADD, 0, p->n[a].a, mpk__xc(p, ca + cb), 0);
		break;
	case X_SUB:
		if (a == b)
			return mpk__xc(p, 0);
		if (kb)
			return mpk__x(p, X_ADD, 0, a, mpk__xc(p, -cb), 0);
		break;
	case X_XOR:
		if (a == b)
			return mpk__xc(p, 0);
		if (kb && !cb)
			return a;
		break;
	case X_AND:
		if (kb && !cb)
			return b;
		if ((kb && cb == ALL) || a == b)
			return a;
		break;
	case X_OR:
		if ((kb && !cb) || a == b)
			return a;
		if (kb && cb == ALL)
			return b;
		break;
	case X_SEL:
		if (a == b)
			return a;
		break;
	case X_MUL:
		if (kb && cb == 0)
			return b;
		if (kb && cb == 1)
			return a;
		break;
	case X_SHL: case X_SHR: case X_SAR:
		if (kb && !(cb & 63))
			return a;
		if (ka && !ca)
			return a;
		break;
	case X_NOT: case X_NEG:
		if (p->n[a].op == op)
			return p->n[a].a;
		break;
	case X_ZX:
		if (arg >= 64)
			return a;
		if (p->n[a].op == X_ZX)
			return mpk__x(p, X_ZX, arg < p->n[a].arg ? arg : p->n[a].arg, p->n[a].a, 0, 0);
		if (p->n[a].op == X_LOAD && 8 * p->n[a].arg <= arg)
			return a;
		break;
	case X_SX:
		if (arg >= 64)
			return a;
		break;
	}
	if (p->full)
		return XID_OTHER;
	return intern(p, op, arg, a, b, 0);
}

bool mpk__x_has_input(struct xpool *p, xid e)
{
	const struct xnode *n = &p->n[e];
	bool r;

	if (p->have[e] & 2)
		return p->have[e] & 4;
	switch (n->op) {
	case X_REG: case X_LOAD: r = true; break;
	case X_CONST: case X_PKRU: case X_OTHER: r = false; break;
	default: r = mpk__x_has_input(p, n->a) || (binary(n->op) && mpk__x_has_input(p, n->b));
	}
	p->have[e] |= (uint8_t)(2 | (r ? 4 : 0));
	return r;
}

/* --- abstract values --- */

static uint64_t unknown(const struct xval *v)
{
	return ~(v->k0 | v->k1);
}

static uint64_t winmask(const struct xval *v)
{
	return v->whi > v->wlo ? lowmask(v->whi) & ~lowmask(v->wlo) : 0;
}

/* The longest run of set bits of m, as the window. */
static void set_window(struct xval *v, uint64_t m)
{
	unsigned best = 0, blo = 0;
	for (unsigned i = 0; i < 64;) {
		if (!((m >> i) & 1)) {
			i++;
			continue;
		}
		unsigned j = i;
		while (j < 64 && ((m >> j) & 1))
			j++;
		if (j - i > best)
			best = j - i, blo = i;
		i = j;
	}
	v->wlo = (uint8_t)blo;
	v->whi = (uint8_t)(blo + best);
}

static void normalize(struct xval *v)
{
	uint64_t u = unknown(v);
	set_window(v, winmask(v) & u);
	uint64_t w = winmask(v);
	v->c0 = (v->c0 | w) & u;
	v->c1 = (v->c1 | w) & u;
	v->p1 = (v->p1 | v->c1) & u;
}

static struct xval known(uint64_t c)
{
	return (struct xval){ .k0 = ~c, .k1 = c };
}

static unsigned ctz0(uint64_t m)
{
	return m ? (unsigned)__builtin_ctzll(m) : 64;
}

/* A variable shift (left, or right for SHR): what follows whatever the
 * count is; the bits it can choose only where the count's unknown bits can
 * take every combination (so the count can be 0, or move x's possible ones
 * off any bit). */
static struct xval shift_var(const struct xval *x, const struct xval *s, bool left)
{
	struct xval r = { 0 };
	uint64_t xmaybe1 = ~x->k0, cnt_unknown = unknown(s) & 63, u;
	unsigned m = (unsigned)(s->k1 & 63); /* the count is at least its known ones */

	if (left) {
		r.k0 = lowmask(ctz0(xmaybe1) + m);
	} else {
		unsigned z = (xmaybe1 ? (unsigned)__builtin_clzll(xmaybe1) : 64) + m;
		r.k0 = z >= 64 ? ALL : ~(ALL >> z);
	}
	if (!xmaybe1)
		return known(0);
	r.org = x->org | s->org;
	u = unknown(&r);
	bool free_count = cnt_unknown && (cnt_unknown & ~winmask(s)) == 0;
	bool apart = !(x->org & s->org);
	if (free_count && apart) {
		unsigned lo = ctz0(xmaybe1), hi = 64 - (unsigned)__builtin_clzll(xmaybe1);
		for (unsigned j = 0; j < 6; j++)
			if (((cnt_unknown >> j) & 1) && (1u << j) >= hi - lo)
				r.c0 = u; /* two counts 2^j apart: every bit 0 in one */
		if (!(s->k1 & 63)) { /* count 0: x itself */
			r.c1 = (x->c1 | x->k1) & u;
			r.p1 = (x->p1 | x->k1) & u;
			r.c0 |= (x->c0 | x->k0) & u;
		}
	}
	return r;
}

static struct xval shift_const(const struct xval *x, unsigned k, int op)
{
	struct xval r = *x;
	uint64_t top = k ? ~(ALL >> k) : 0;

	if (op == X_SHL) {
		r.k0 = x->k0 << k | lowmask(k);
		r.k1 = x->k1 << k;
		r.c0 = x->c0 << k, r.c1 = x->c1 << k, r.p1 = x->p1 << k;
		r.wlo = (uint8_t)(x->wlo + k > 64 ? 64 : x->wlo + k);
		r.whi = (uint8_t)(x->whi + k > 64 ? 64 : x->whi + k);
		return r;
	}
	r.k0 = x->k0 >> k, r.k1 = x->k1 >> k;
	r.c0 = x->c0 >> k, r.c1 = x->c1 >> k, r.p1 = x->p1 >> k;
	r.wlo = (uint8_t)(x->wlo > k ? x->wlo - k : 0);
	r.whi = (uint8_t)(x->whi > k ? x->whi - k : 0);
	uint64_t sign = 1ull << 63;
	if (op == X_SHR || (x->k0 & sign)) {
		r.k0 |= top;
	} else if (x->k1 & sign) {
		r.k1 |= top;
	} else { /* copies of the sign bit */
		r.c0 |= x->c0 & sign ? top : 0;
		r.c1 |= x->c1 & sign ? top : 0;
		r.p1 |= x->c1 & sign ? top : 0;
		if (r.whi == 64 - k && x->whi == 64)
			r.whi = (uint8_t)(64 - k); /* the copies are not free apart */
	}
	return r;
}

static struct xval eval(struct xpool *p, xid e);

static struct xval eval_op(struct xpool *p, const struct xnode *n)
{
	struct xval a = eval(p, n->a), b = { 0 }, r = { 0 };
	uint64_t u, ao, bo, both;
	bool apart;

	if (binary(n->op))
		b = eval(p, n->b);
	apart = !(a.org & b.org);
	r.org = a.org | b.org;
	switch (n->op) {
	case X_AND:
		r.k0 = a.k0 | b.k0;
		r.k1 = a.k1 & b.k1;
		u = unknown(&r);
		ao = u & b.k1, bo = u & a.k1, both = u & ~ao & ~bo;
		r.c1 = (ao & a.c1) | (bo & b.c1) | (apart ? both & a.c1 & b.c1 : 0);
		r.c0 = (ao & a.c0) | (bo & b.c0) | (both & (a.c0 | b.c0));
		r.p1 = (ao & a.p1) | (bo & b.p1) | (apart ? both & a.p1 & b.p1 : 0);
		set_window(&r, winmask(&a) & b.k1);
		if (winmask(&b) & a.k1 && __builtin_popcountll(winmask(&b) & a.k1) > r.whi - r.wlo)
			set_window(&r, winmask(&b) & a.k1);
		break;
	case X_OR:
		r.k1 = a.k1 | b.k1;
		r.k0 = a.k0 & b.k0;
		u = unknown(&r);
		ao = u & b.k0, bo = u & a.k0, both = u & ~ao & ~bo;
		r.c1 = (ao & a.c1) | (bo & b.c1) | (both & (a.c1 | b.c1));
		r.c0 = (ao & a.c0) | (bo & b.c0) | (apart ? both & a.c0 & b.c0 : 0);
		r.p1 = (ao & a.p1) | (bo & b.p1) | (both & (a.p1 | b.p1));
		set_window(&r, winmask(&a) & b.k0);
		if (winmask(&b) & a.k0 && __builtin_popcountll(winmask(&b) & a.k0) > r.whi - r.wlo)
			set_window(&r, winmask(&b) & a.k0);
		break;
	case X_XOR: {
		r.k0 = (a.k0 & b.k0) | (a.k1 & b.k1);
		r.k1 = (a.k0 & b.k1) | (a.k1 & b.k0);
		u = unknown(&r);
		uint64_t a0 = u & b.k0, a1 = u & b.k1, b0 = u & a.k0, b1 = u & a.k1;
		both = u & ~(a0 | a1 | b0 | b1);
		uint64_t full = apart ? (a.c0 & a.c1) | (b.c0 & b.c1) : 0;
		r.c0 = (a0 & a.c0) | (a1 & a.c1) | (b0 & b.c0) | (b1 & b.c1) | (both & full);
		r.c1 = (a0 & a.c1) | (a1 & a.c0) | (b0 & b.c1) | (b1 & b.c0) | (both & full);
		r.p1 = (a0 & a.p1) | (a1 & a.c0) | (b0 & b.p1) | (b1 & b.c0) | (both & full);
		uint64_t wa = apart ? winmask(&a) : winmask(&a) & (b.k0 | b.k1);
		uint64_t wb = apart ? winmask(&b) : winmask(&b) & (a.k0 | a.k1);
		set_window(&r, __builtin_popcountll(wa) >= __builtin_popcountll(wb) ? wa : wb);
		break;
	}
	case X_ADD: case X_SUB: {
		unsigned low = ctz0(unknown(&a) | unknown(&b));
		uint64_t s = n->op == X_ADD ? a.k1 + b.k1 : a.k1 - b.k1, lm = lowmask(low);
		r.k1 = s & lm;
		r.k0 = ~s & lm;
		/* a sum is a bijection of either side when the other is fixed */
		uint64_t wa = apart ? winmask(&a) : 0, wb = apart ? winmask(&b) : 0;
		set_window(&r, __builtin_popcountll(wa) >= __builtin_popcountll(wb) ? wa : wb);
		/* plus or minus a carry (0 or 1, whatever it depends on): above
		 * the window's lowest bit, each bit still takes both values
		 * (window bits below it all 0, or all 1 for a borrow, stop it) */
		const struct xval *w = (b.k0 | 1) == ALL ? &a : n->op == X_ADD && (a.k0 | 1) == ALL ? &b : NULL;
		if (w && !wa && !wb && w->whi > w->wlo + 1) {
			uint64_t m = lowmask(w->whi) & ~lowmask(w->wlo + 1u);
			r.c0 |= m, r.c1 |= m, r.p1 |= m;
		}
		break;
	}
	case X_MUL: {
		unsigned tz = ctz0(~a.k0) + ctz0(~b.k0);
		r.k0 = lowmask(tz);
		uint64_t c;
		if (is_const(p, n->b, &c) && c) {
			unsigned t = ctz0(c);
			r.wlo = (uint8_t)(a.wlo + t > 64 ? 64 : a.wlo + t);
			r.whi = (uint8_t)(a.whi + t > 64 ? 64 : a.whi + t);
		}
		break;
	}
	case X_SHL: case X_SHR: case X_SAR: {
		uint64_t c;
		if (is_const(p, n->b, &c))
			r = shift_const(&a, (unsigned)(c & 63), n->op);
		else if (n->op != X_SAR || (a.k0 >> 63))
			r = shift_var(&a, &b, n->op == X_SHL);
		else
			r = (struct xval){ .org = a.org | b.org };
		break;
	}
	case X_NOT:
		r = a;
		r.k0 = a.k1, r.k1 = a.k0, r.c0 = a.c1, r.c1 = a.c0, r.p1 = a.c0;
		break;
	case X_NEG:
		r = a;
		r.k0 = lowmask(ctz0(~a.k0));
		r.k1 = 0;
		r.c0 = r.c1 = r.p1 = 0;
		break;
	case X_ZX: {
		uint64_t lm = lowmask(n->arg);
		r = a;
		r.k0 = a.k0 | ~lm, r.k1 = a.k1 & lm;
		r.c0 &= lm, r.c1 &= lm, r.p1 &= lm;
		if (r.whi > n->arg)
			r.whi = n->arg;
		break;
	}
	case X_SX: {
		uint64_t lm = lowmask(n->arg), up = ~lm, sb = 1ull << (n->arg - 1);
		r = a;
		r.k0 = (a.k0 & lm) | (a.k0 & sb ? up : 0);
		r.k1 = (a.k1 & lm) | (a.k1 & sb ? up : 0);
		r.c0 = (a.c0 & lm) | (a.c0 & sb ? up : 0);
		r.c1 = (a.c1 & lm) | (a.c1 & sb ? up : 0);
		r.p1 = (a.p1 & lm) | (a.c1 & sb ? up : 0);
		if (r.whi > n->arg)
			r.whi = n->arg;
		break;
	}
	case X_SEL:
		r.k0 = a.k0 & b.k0, r.k1 = a.k1 & b.k1;
		r.c0 = (a.c0 | a.k0) & (b.c0 | b.k0);
		r.c1 = (a.c1 | a.k1) & (b.c1 | b.k1);
		r.p1 = (a.p1 | a.k1) & (b.p1 | b.k1);
		break;
	}
	return r;
}

static struct xval eval(struct xpool *p, xid e)
{
	const struct xnode *n = &p->n[e];
	struct xval r = { 0 };

	if (p->have[e] & 1)
		return p->val[e];
	switch (n->op) {
	case X_OTHER:
		r.org = ALL;
		break;
	case X_PKRU:
		r.k0 = ~lowmask(32);
		r.p1 = lowmask(32);
		break;
	case X_CONST:
		r = known(n->v);
		break;
	case X_REG:
		r.c0 = r.c1 = r.p1 = ALL;
		r.org = 1ull << n->arg;
		r.whi = 64;
		break;
	case X_LOAD: {
		/* Memory the start's registers point at is the attacker's to
		 * set; at a fixed address, or one the path made, it is not a
		 * register the attacker must set: a write is enough. */
		struct xval a = eval(p, n->a);
		if (a.org && a.org != ALL && (a.c0 & a.c1)) {
			unsigned bits = 8u * n->arg;
			r.k0 = ~lowmask(bits);
			r.c0 = r.c1 = r.p1 = lowmask(bits);
			r.org = MEMORY_ORG;
			r.whi = (uint8_t)bits;
		} else {
			r.org = ALL;
		}
		break;
	}
	default:
		r = eval_op(p, n);
	}
	normalize(&r);
	p->val[e] = r;
	p->have[e] |= 1;
	return r;
}

const struct xval *mpk__x_eval(struct xpool *p, xid e)
{
	eval(p, e);
	return &p->val[e];
}
