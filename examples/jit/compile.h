/* SPDX-License-Identifier: MIT */
/* Arithmetic expressions in x (integers, + - * /, parentheses) to x86-64. */
#ifndef JIT_COMPILE_H
#define JIT_COMPILE_H

#include <stddef.h>
#include <stdint.h>

typedef int64_t (*jit_fn)(int64_t x);

/* Compile expr into code (at most cap bytes) as a function of x (System V:
 * x in rdi, result in rax).  Returns the length, or 0 on a syntax error
 * or when it does not fit. */
size_t jit_compile(const char *expr, uint8_t *code, size_t cap);

/* The same expression, interpreted: the reference the compiled code is
 * checked against.  *ok becomes 0 on a syntax error or division by 0. */
int64_t jit_eval(const char *expr, int64_t x, int *ok);

#endif
