/* SPDX-License-Identifier: MIT */
/*
 * t_scan_compiled's cases, as a compiler writes them: the Makefile builds
 * this file with gcc and clang (when installed), at -O0 and -O2, once per
 * case: a shared object whose scan_case() sets PKRU to 0 with constant
 * arguments, or (CASE_PKEY_SET) a static program calling glibc's
 * pkey_set(1, 0), where the call is direct.
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <sys/mman.h>

#if defined(CASE_WRPKRU)
void scan_case(void);
void scan_case(void)
{
	_wrpkru(0);
}
#elif defined(CASE_BUILTIN)
void scan_case(void);
void scan_case(void)
{
	__builtin_ia32_wrpkru(0);
}
#elif defined(CASE_VOLATILE)
void scan_case(void);
void scan_case(void)
{
	volatile unsigned int zero = 0;
	_wrpkru(zero);
}
#elif defined(CASE_PKEY_SET)
int main(void)
{
	return pkey_set(1, 0);
}
#endif
