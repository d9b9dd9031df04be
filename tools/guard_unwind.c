/* SPDX-License-Identifier: MIT */
/*
 * Exceptions and forced unwinds (pthread_cancel(), pthread_exit()) across
 * the gate (docs/guard.md, "Unwinding").  While the library runs, the
 * caller's return address is on the shadow stack, and its stack slot
 * holds the gate's own: no unwind rule can say where the caller is, so
 * the gate's CFI ends the walk there, and its personality routine takes
 * what reaches it instead.  In the search phase it says "handler found"
 * (the library's frames below get their cleanups: destructors run); in
 * the cleanup phase it lands in guard_gate_pad, which leaves the gate as
 * its way out does (the frame popped, the rights of before), puts the
 * caller's return address back in its slot, so that the stack is as
 * right after the caller's call, and carries on from there: a new raise
 * of the same exception, which searches the program's frames for its
 * handler, or the forced unwind resumed.  Nothing of this runs on a call
 * that returns: the gate's instructions are the same.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <unwind.h>

#include "guard.h"

/* The gate's return point from the function (guard_gate.c), and the
 * landing pad below. */
extern const char guard_gate_back[];
void guard_gate_pad(void);

_Unwind_Reason_Code guard_personality(int version, _Unwind_Action actions, _Unwind_Exception_Class cls,
				      struct _Unwind_Exception *exc, struct _Unwind_Context *ctx);
_Noreturn void guard_uncaught(struct _Unwind_Exception *exc);

_Unwind_Reason_Code guard_personality(int version, _Unwind_Action actions, _Unwind_Exception_Class cls,
				      struct _Unwind_Exception *exc, struct _Unwind_Context *ctx)
{
	(void)cls;
	/* Only while the function runs: anywhere else in the gate nothing
	 * throws (guard_enter() and guard_leave() are C without unwinding). */
	if (version != 1 || _Unwind_GetIP(ctx) != (uintptr_t)guard_gate_back)
		return _URC_CONTINUE_UNWIND;
	if (actions & _UA_SEARCH_PHASE)
		return _URC_HANDLER_FOUND;
	_Unwind_SetGR(ctx, __builtin_eh_return_data_regno(0), (uintptr_t)exc);
	_Unwind_SetGR(ctx, __builtin_eh_return_data_regno(1), (actions & _UA_FORCE_UNWIND) != 0);
	_Unwind_SetIP(ctx, (uintptr_t)guard_gate_pad);
	return _URC_INSTALL_CONTEXT;
}

/* No handler past the gate (the pad's raise returned): what the C++
 * runtime does when its own raise returns (the exception caught for
 * terminate(), whose handler prints it), if it is a C++ exception and
 * the runtime is there; else a line and abort. */
_Noreturn void guard_uncaught(struct _Unwind_Exception *exc)
{
	static const char msg[] = "mpkit guard: an exception left the library and nothing catches it\n";
	/* "GNUCC++" and a last byte: 0 for an exception, 1 for a dependent one. */
	uint64_t cxx = 0x474e5543432b2b00;

	if ((exc->exception_class & ~(uint64_t)1) == cxx) {
		void *(*begin)(void *) = (void *(*)(void *))dlsym(RTLD_DEFAULT, "__cxa_begin_catch");
		void (*terminate)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "_ZSt9terminatev");

		if (begin && terminate) {
			begin(exc);
			terminate();
		}
	}
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		abort();
	abort();
}

/* Entered with the stack pointer as the gate had it at its call (the
 * caller's, before its call), %rax the exception, %rdx whether the
 * unwind is forced.  Until the return address is back in its slot the
 * caller cannot be found ("undefined"); from then on this is a function
 * the caller called, with 24 bytes of its own, and the unwinder's calls
 * are made from here (no C frame between, whose unwind tables a build's
 * CFLAGS could leave out): a new raise, whose search starts at the
 * caller, or the forced unwind resumed (its stop function goes on with
 * the program's frames). */
__asm__(".text\n"
	".globl guard_gate_pad\n"
	".hidden guard_gate_pad\n"
	".type guard_gate_pad, @function\n"
	"guard_gate_pad:\n"
	"	.cfi_startproc\n"
	"	.cfi_def_cfa_offset 0\n"
	"	.cfi_undefined rip\n"
	"	sub $8, %rsp; .cfi_adjust_cfa_offset 8\n" /* the return address's slot */
	"	push %rax; .cfi_adjust_cfa_offset 8; push %rdx; .cfi_adjust_cfa_offset 8\n"
	"	sub $8, %rsp; .cfi_adjust_cfa_offset 8\n" /* the calls aligned (16) */
	"	call guard_leave\n"
	"	mov %rax, 24(%rsp)\n"
	"	.cfi_offset rip, -8\n"
	"	mov 16(%rsp), %rdi\n"
	"	cmpq $0, 8(%rsp)\n"
	"	jne 1f\n"
	"	call _Unwind_RaiseException@PLT\n"
	"	mov 16(%rsp), %rdi\n"
	"	call guard_uncaught\n"
	"1:	call _Unwind_Resume@PLT\n"
	"	ud2\n"
	"	.cfi_endproc\n"
	".size guard_gate_pad, .-guard_gate_pad\n");
