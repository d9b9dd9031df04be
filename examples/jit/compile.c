/* SPDX-License-Identifier: MIT */
/*
 * A recursive-descent compiler for a stack machine on the x86-64 stack:
 * each operand is pushed, each operator pops two and pushes one.  The same
 * parser interprets, with a flag.
 */
#include <ctype.h>
#include <string.h>

#include "compile.h"

struct parse {
	const char *s;
	uint8_t *code; /* NULL: interpret */
	size_t len, cap;
	int64_t x, stack[64];
	int sp, ok;
};

static void emit(struct parse *p, const void *bytes, size_t n)
{
	if (p->len + n > p->cap) {
		p->ok = 0;
		return;
	}
	memcpy(p->code + p->len, bytes, n);
	p->len += n;
}

static void push(struct parse *p, int64_t v, int is_x)
{
	if (p->code) {
		if (is_x) {
			emit(p, "\x57", 1); /* push rdi */
		} else {
			emit(p, "\x48\xb8", 2); /* mov rax, imm64 */
			emit(p, &v, 8);
			emit(p, "\x50", 1); /* push rax */
		}
	} else if (p->sp < 64) {
		p->stack[p->sp++] = is_x ? p->x : v;
	} else {
		p->ok = 0;
	}
}

static void op(struct parse *p, char c)
{
	if (p->code) {
		emit(p, "\x59\x58", 2); /* pop rcx; pop rax */
		switch (c) {
		case '+': emit(p, "\x48\x01\xc8", 3); break;         /* add rax, rcx */
		case '-': emit(p, "\x48\x29\xc8", 3); break;         /* sub rax, rcx */
		case '*': emit(p, "\x48\x0f\xaf\xc1", 4); break;     /* imul rax, rcx */
		case '/': emit(p, "\x48\x99\x48\xf7\xf9", 5); break; /* cqo; idiv rcx */
		}
		emit(p, "\x50", 1); /* push rax */
		return;
	}
	if (p->sp < 2) {
		p->ok = 0;
		return;
	}
	int64_t b = p->stack[--p->sp], a = p->stack[p->sp - 1], r = 0;
	switch (c) {
	case '+': r = (int64_t)((uint64_t)a + (uint64_t)b); break;
	case '-': r = (int64_t)((uint64_t)a - (uint64_t)b); break;
	case '*': r = (int64_t)((uint64_t)a * (uint64_t)b); break;
	case '/':
		if (!b || (a == INT64_MIN && b == -1))
			p->ok = 0;
		else
			r = a / b;
		break;
	}
	p->stack[p->sp - 1] = r;
}

static void skip(struct parse *p)
{
	while (isspace((unsigned char)*p->s))
		p->s++;
}

static void expr(struct parse *p);

static void primary(struct parse *p)
{
	skip(p);
	if (*p->s == '(') {
		p->s++;
		expr(p);
		skip(p);
		if (*p->s++ != ')')
			p->ok = 0;
	} else if (*p->s == 'x') {
		p->s++;
		push(p, 0, 1);
	} else if (isdigit((unsigned char)*p->s)) {
		int64_t v = 0;
		while (isdigit((unsigned char)*p->s))
			v = v * 10 + (*p->s++ - '0');
		push(p, v, 0);
	} else {
		p->ok = 0;
	}
}

/* One precedence level: next (op next)* for the operators in ops. */
static void level(struct parse *p, const char *ops, void (*next)(struct parse *))
{
	next(p);
	for (skip(p); p->ok && *p->s && strchr(ops, *p->s); skip(p)) {
		char c = *p->s++;
		next(p);
		op(p, c);
	}
}

static void term(struct parse *p)
{
	level(p, "*/", primary);
}

static void expr(struct parse *p)
{
	level(p, "+-", term);
}

size_t jit_compile(const char *e, uint8_t *code, size_t cap)
{
	struct parse p = { .s = e, .code = code, .cap = cap, .ok = 1 };

	expr(&p);
	skip(&p);
	emit(&p, "\x58\xc3", 2); /* pop rax; ret */
	return p.ok && !*p.s ? p.len : 0;
}

int64_t jit_eval(const char *e, int64_t x, int *ok)
{
	struct parse p = { .s = e, .x = x, .ok = 1 };

	expr(&p);
	skip(&p);
	*ok = p.ok && !*p.s && p.sp == 1;
	return *ok ? p.stack[0] : 0;
}
