// SPDX-License-Identifier: MIT
// libguardxx.so, the C++ library t_guard_unwind guards: exceptions thrown
// in it, and through it from the program's callbacks, with a destructor
// of its own in every frame they cross (counted in its state).
#include <pthread.h>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include "guard_xx.h"

// The state fills a page of its own, as libguardtest.so's does.
static struct {
	long state;
	long undone;
	char rest[4096 - 2 * sizeof(long)];
} own __attribute__((section(".data"), aligned(4096)));

namespace {
struct counted {
	~counted() { own.undone++; }
};
}

long x_throw(long v)
{
	counted c;
	own.state += v;
	throw std::runtime_error("thrown in the library " + std::to_string(own.state));
}

long x_apply(long (*cb)(long), long v)
{
	counted c;
	own.state += v;
	return cb(v) + 0; // not a tail call: this frame stays
}

long x_undone(void)
{
	return own.undone;
}

long *x_ptr(void)
{
	return &own.state;
}

long x_wait(int fd, void (*ready)(void))
{
	counted c;
	char b;
	ready();
	return read(fd, &b, 1) + 0;
}

long x_test(void (*ready)(void))
{
	counted c;
	ready();
	pthread_testcancel();
	return 0;
}

extern "C" __attribute__((visibility("hidden"), used)) long x_boom(void)
{
	throw std::runtime_error("thrown first thing in the library");
}

// The call among the first 5 bytes, which the patch displaces: the
// callee must still return into this function's own code, which its CFI
// describes (tools/guard_patch.c, move_call()).
__asm__(".text\n"
	".globl x_first\n"
	".type x_first, @function\n"
	"x_first:\n"
	"	.cfi_startproc\n"
	"	sub $8, %rsp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	call *%rdi\n"
	"	add $8, %rsp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size x_first, .-x_first\n"
	".globl x_first_direct\n"
	".type x_first_direct, @function\n"
	"x_first_direct:\n"
	"	.cfi_startproc\n"
	"	sub $8, %rsp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	call x_boom\n"
	"	add $8, %rsp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size x_first_direct, .-x_first_direct\n");
