/* SPDX-License-Identifier: MIT */
/*
 * The classes of a WRPKRU or XRSTOR that is not one of mpkit's checked
 * sites (see scan.h).  The question is what an attacker who can only jump
 * (overwrite a return address or a function pointer, and write memory)
 * gets from it, as opposed to one who also sets registers (ROP, the power
 * that forges a sigreturn frame anyway).  Every way into the instruction is
 * followed backwards, over every decoding of the bytes (a jump can land
 * anywhere, also inside an instruction) and over every direct jump, call
 * and conditional branch of the range that targets one of them: a path on
 * which the code itself gives the register its value (a constant, memory at
 * a fixed address, RDPKRU, a system call's result) makes the site a gadget;
 * a site whose every path, as far as the search goes, still needs the value
 * from registers the attacker must set is ROP-only.  What counts:
 *   WRPKRU: EAX (the value PKRU gets);
 *   XRSTOR: bit 9 of EAX (PKRU in the requested-feature bitmap): a path
 *     that clears it cannot load PKRU at all; one that sets it loads PKRU
 *     from memory (an XSAVE header without bit 9 in XSTATE_BV loads 0,
 *     every key open), so it is a gadget.
 * Not followed: indirect jumps and calls, returns, and paths across
 * ranges (another library's code calling in).  The search is breadth
 * first, bounded in depth and in size; past the size bound the site is
 * reported as a gadget (unsure), never as ROP-only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "insn.h"
#include "scan.h"

#define DEPTH_MAX 48       /* instructions back from the site */
#define NODES_MAX 8192     /* states visited per site (49 at most here: docs/threat-model.md) */
#define SEEN_BITS 14       /* hash table: twice NODES_MAX */
#define PKRU_BIT 9         /* PKRU's bit in XCR0 and the XSAVE bitmaps */
#define LOW32 0xffffffffull

/* Registers a call may change (SysV ABI): what the callee leaves there. */
#define CLOBBERED ((1u << INSN_RAX) | (1u << INSN_RCX) | (1u << INSN_RDX) | (1u << INSN_RSI) | \
		   (1u << INSN_RDI) | (0xfu << 8))

/* The direct branches with a 32-bit displacement in a range, by target:
 * chained in a hash table (head[] by target, next[] by branch). */
struct mpk_edges {
	uint32_t *from;
	int32_t *next, *head;
	size_t n, mask;
};

static bool rel8_branch(uint8_t b)
{
	return (b >= 0x70 && b <= 0x7f) || b == 0xeb || (b >= 0xe0 && b <= 0xe3);
}

/* The target of a jmp, call or jcc with a 32-bit displacement at i, if the
 * bytes are one and it lies in the range: a rough byte match (the decoder
 * confirms each one when it is used). */
static inline bool rel32_target(const struct mpk_code *c, size_t i, uint32_t *to)
{
	const uint8_t *b = c->bytes + i;
	int64_t t;
	int32_t rel;

	if ((b[0] & 0xfe) != 0xe8 && b[0] != 0x0f)
		return false; /* most bytes: the one test */
	if ((b[0] == 0xe8 || b[0] == 0xe9) && i + 5 <= c->len) {
		memcpy(&rel, b + 1, 4);
		t = (int64_t)i + 5 + rel;
	} else if (b[0] == 0x0f && i + 6 <= c->len && b[1] >= 0x80 && b[1] <= 0x8f) {
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

static size_t slot(uint32_t to, size_t mask)
{
	return (size_t)((to * 0x9e3779b1u) & mask);
}

/* Every 32-bit branch of the range, at every offset.  Those with an 8-bit
 * displacement are looked for next to their target, when needed. */
static int edges_build(struct mpk_code *c)
{
	struct mpk_edges *e = calloc(1, sizeof(*e));
	size_t n = 0, size = 16;
	uint32_t to;

	if (!e)
		return -1;
	if (c->len > UINT32_MAX) {
		free(e);
		errno = EFBIG;
		return -1;
	}
	for (size_t i = 0; i + 2 <= c->len; i++)
		n += rel32_target(c, i, &to);
	while (size < n)
		size *= 2;
	e->from = malloc((n + 1) * sizeof(*e->from));
	e->next = malloc((n + 1) * sizeof(*e->next));
	e->head = malloc(size * sizeof(*e->head));
	c->edges = e;
	if (!e->from || !e->next || !e->head)
		return -1;
	e->mask = size - 1;
	memset(e->head, -1, size * sizeof(*e->head));
	for (size_t i = 0; i + 2 <= c->len && e->n < n; i++) {
		if (!rel32_target(c, i, &to))
			continue;
		size_t h = slot(to, e->mask);
		e->from[e->n] = (uint32_t)i;
		e->next[e->n] = e->head[h];
		e->head[h] = (int32_t)e->n++;
	}
	return 0;
}

void mpk__scan_code_done(struct mpk_code *c)
{
	struct mpk_edges *e = c->edges;
	if (e) {
		free(e->from);
		free(e->next);
		free(e->head);
		free(e);
	}
	free(c->queue);
	free(c->seen);
	c->edges = NULL;
	c->queue = c->seen = NULL;
	c->edges_ready = false;
}

/* What is known of the value on a path, going backwards: mode BITS follows
 * one bit of one register (XRSTOR), mode REGS the set of registers the
 * value is a function of. */
enum { MODE_REGS, MODE_BIT };
struct state {
	uint8_t mode, reg;
	uint16_t regs;
};
enum { STEP_ON, STEP_FIXED, STEP_HARMLESS };

static bool partial(int width)
{
	return width == W_8L || width == W_8H || width == W_16;
}

static bool covers(int width, unsigned bit)
{
	switch (width) {
	case W_8L: return bit < 8;
	case W_8H: return bit >= 8 && bit < 16;
	case W_16: return bit < 16;
	default: return true;
	}
}

/* The registers the value of d->reg came from, as far as its low 32 bits
 * go (all that PKRU and the feature bit need). */
static uint16_t sources(const struct insn_dst *d)
{
	uint16_t self = (uint16_t)(partial(d->width) ? 1u << d->reg : 0);

	switch (d->kind) {
	case DST_CONST:
	case DST_FIXED:
		return self;
	case DST_AND:
		return (d->imm & LOW32) ? (uint16_t)(1u << d->reg) : 0;
	case DST_OR:
		return (d->imm & LOW32) == LOW32 ? 0 : (uint16_t)(1u << d->reg);
	default: /* FROM COPY ZX8 */
		return (uint16_t)(d->src | self);
	}
}

/* The state before an instruction, from the state after it.  call: the
 * instruction is a call and the path goes through its callee's return. */
static int step(struct state *st, const struct insn *in, bool call)
{
	if (st->mode == MODE_REGS) {
		uint16_t written = 0, from = 0;
		for (unsigned i = 0; i < in->ndst; i++) {
			const struct insn_dst *d = &in->dst[i];
			if (!(st->regs & (1u << d->reg)))
				continue;
			if (!partial(d->width))
				written |= (uint16_t)(1u << d->reg);
			from |= sources(d);
		}
		if (call)
			written |= st->regs & CLOBBERED; /* the callee's values */
		st->regs = (uint16_t)((st->regs & ~written) | from);
		return st->regs ? STEP_ON : STEP_FIXED;
	}
	if (call && (CLOBBERED & (1u << st->reg)))
		return STEP_FIXED;
	for (unsigned i = in->ndst; i--;) {
		const struct insn_dst *d = &in->dst[i];
		if (d->reg != st->reg || !covers(d->width, PKRU_BIT))
			continue;
		switch (d->kind) {
		case DST_CONST:
			return (d->imm >> PKRU_BIT) & 1 ? STEP_FIXED : STEP_HARMLESS;
		case DST_FIXED:
			return STEP_FIXED;
		case DST_COPY:
			st->reg = d->src_reg;
			return STEP_ON;
		case DST_AND:
			return (d->imm >> PKRU_BIT) & 1 ? STEP_ON : STEP_HARMLESS;
		case DST_OR:
			return (d->imm >> PKRU_BIT) & 1 ? STEP_FIXED : STEP_ON;
		case DST_ZX8:
			return STEP_HARMLESS; /* PKRU_BIT >= 8 */
		default:
			st->mode = MODE_REGS;
			st->regs = sources(d);
			return st->regs ? STEP_ON : STEP_FIXED;
		}
	}
	return STEP_ON;
}

static bool is_prefix(uint8_t b)
{
	return (b >= 0x40 && b <= 0x4f) || b == 0x66 || b == 0x67 || b == 0xf0 || b == 0xf2 ||
	       b == 0xf3 || b == 0x2e || b == 0x36 || b == 0x3e || b == 0x26 || b == 0x64 || b == 0x65;
}

struct node {
	uint32_t at;
	uint16_t depth;
	struct state st;
};

struct search {
	const struct mpk_code *c;
	struct node *queue;
	size_t head, tail;
	uint64_t *seen;
	bool full;
};

static uint64_t key(uint32_t at, const struct state *st)
{
	return (uint64_t)at << 21 | (uint64_t)st->mode << 20 |
	       (st->mode == MODE_BIT ? st->reg : st->regs);
}

/* Queue (at, st) unless seen; false when the search is out of room. */
static bool push(struct search *s, uint32_t at, const struct state *st, unsigned depth)
{
	uint64_t k = key(at, st) + 1, mask = (1u << SEEN_BITS) - 1;
	size_t h = (size_t)((k * 0x9e3779b97f4a7c15ull) >> (64 - SEEN_BITS));

	while (s->seen[h]) {
		if (s->seen[h] == k)
			return true;
		h = (h + 1) & mask;
	}
	if (s->tail == NODES_MAX) {
		s->full = true;
		return false;
	}
	s->seen[h] = k;
	s->queue[s->tail++] = (struct node){ at, (uint16_t)depth, *st };
	return true;
}

/* One way into node n: the instruction at p ends where n is (or branches
 * there); the state before it is queued, or decides the site. */
static int through(struct search *s, const struct node *n, uint32_t p, const struct insn *in, bool call)
{
	struct state st = n->st;
	int r = step(&st, in, call);
	if (r == STEP_ON && !push(s, p, &st, n->depth + 1u))
		return STEP_FIXED; /* out of room: not ROP-only */
	return r;
}

void mpk__scan_class(struct mpk_code *c, size_t off, int kind, struct mpk_class *out)
{
	struct search s = { .c = c };
	struct insn in;

	memset(out, 0, sizeof(*out));
	out->cls = MPK_SITE_GADGET;
	out->unsure = true;
	if (!c->edges_ready) {
		c->edges_ready = true;
		c->edges_failed = edges_build(c) != 0;
	}
	if (!c->queue) {
		c->queue = malloc(NODES_MAX * sizeof(struct node));
		c->seen = malloc(((size_t)1 << SEEN_BITS) * sizeof(uint64_t));
	}
	s.queue = c->queue;
	s.seen = c->seen;
	if (!s.queue || !s.seen || c->edges_failed || off > UINT32_MAX)
		goto out;
	memset(s.seen, 0, ((size_t)1 << SEEN_BITS) * sizeof(*s.seen));
	struct state first = { kind == MPK_GADGET_XRSTOR ? MODE_BIT : MODE_REGS, INSN_RAX,
			       1u << INSN_RAX };
	/* The instruction may start with prefixes (REX.W: XRSTOR64): each is
	 * a way in too. */
	size_t start = off;
	do
		push(&s, (uint32_t)start, &first, 0);
	while (start > 0 && off - start < 14 && is_prefix(c->bytes[--start]));
	while (s.head < s.tail) {
		struct node n = s.queue[s.head++];
		if (n.depth >= DEPTH_MAX)
			continue;
		/* Fall-through: an instruction of any length ending here. */
		for (uint32_t len = 1; len <= 15 && len <= n.at; len++) {
			uint32_t p = n.at - len;
			if (mpk__insn_decode(c->bytes + p, c->len - p, &in) != (int)len ||
			    in.flow == FLOW_JUMP || in.flow == FLOW_STOP)
				continue;
			int r = through(&s, &n, p, &in, in.flow == FLOW_CALL);
			if (r == STEP_FIXED) {
				out->from = p;
				out->unsure = s.full;
				goto out;
			}
		}
		/* Branches, jumps and calls whose target is here: 8-bit
		 * displacements from up to 128 bytes around, 32-bit ones from
		 * the index. */
		for (uint32_t p = n.at > 129 ? n.at - 129 : 0; p + 2 <= c->len && p <= n.at + 126; p++) {
			if (!rel8_branch(c->bytes[p]) || (int64_t)p + 2 + (int8_t)c->bytes[p + 1] != n.at ||
			    !mpk__insn_decode(c->bytes + p, c->len - p, &in) || !in.has_target ||
			    (int64_t)p + in.target != (int64_t)n.at)
				continue;
			if (through(&s, &n, p, &in, false) == STEP_FIXED) {
				out->from = p;
				out->unsure = s.full;
				goto out;
			}
		}
		for (int32_t k = c->edges->head[slot(n.at, c->edges->mask)]; k >= 0; k = c->edges->next[k]) {
			uint32_t p = c->edges->from[k];
			if (!mpk__insn_decode(c->bytes + p, c->len - p, &in) || !in.has_target ||
			    (int64_t)p + in.target != (int64_t)n.at)
				continue; /* another target in the same slot */
			int r = through(&s, &n, p, &in, false);
			if (r == STEP_FIXED) {
				out->from = p;
				out->unsure = s.full;
				goto out;
			}
		}
	}
	out->cls = s.full ? MPK_SITE_GADGET : MPK_SITE_ROP;
	out->unsure = s.full;
out:
	out->nodes = s.tail;
}
