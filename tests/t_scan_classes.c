/* SPDX-License-Identifier: MIT */
/*
 * The scan's classes (src/shared/scan_class.c) on code written the way an
 * attacker or a compiler writes it: each case is a few instructions ending
 * in a WRPKRU or an XRSTOR, put in read-only data (so that this process
 * has no such gadget of its own), started by an int3 (so that no case runs
 * into the next), and classified as the scan would.  A path on which the
 * code itself gives EAX its value is a gadget, with the start of a path
 * inside the case; ROP only needs every path to leave the value to the
 * registers or memory the attacker sets before jumping.  The kinds: memory
 * the path writes (push/pop, stack slots), results that do not depend on
 * their inputs, paths through prefixed branches, xbegin's abort, computed
 * jumps, past the depth bound, decoder corners (66 REX.W immediates, AMD's
 * rel16 jcc), and the false positives: prefixes that make the site #UD,
 * ECX or EDX set non-zero (#GP).  Each case is then planted alone on an
 * executable page in a child, and mpk_lockdown(MPK_LOCK_SCAN) must refuse
 * the gadgets (EPERM, nothing applied) and lock with the ROP-only ones.
 */
#include "t_pit.h"
#include "scan.h"

#define WRPKRU ".byte 0x0f, 0x01, 0xef\n"
#define ZERO_CD "xor %ecx, %ecx\n xor %edx, %edx\n"
#define CASE(name, body) ".globl " #name "\n" #name ": int3\n" body
#define SITE(name) #name "_site: "
#define NOPS16 ".fill 16, 1, 0x90\n"

__asm__(".section .rodata\n"
	".p2align 6\n"
	".globl c_lo\nc_lo:\n"
	/* the inline gadget: constants, straight */
	CASE(c_const, "xor %eax, %eax\n" ZERO_CD SITE(c_const) WRPKRU)
	/* pkey_set(): EAX from the arguments and PKRU */
	CASE(c_args, "xor %ecx, %ecx\n .byte 0x0f, 0x01, 0xee\n mov %eax, %r9d\n mov %edi, %ecx\n"
		     "mov $3, %edx\n shl %cl, %edx\n shl %cl, %esi\n not %edx\n mov %edx, %eax\n"
		     "and %r9d, %eax\n or %esi, %eax\n" ZERO_CD SITE(c_args) WRPKRU "ret\n")
	/* glibc 2.36's pkey_set, byte for byte (the key doubled by add) */
	CASE(c_glibc, "cmp $0xf, %edi\n ja 1f\n cmp $3, %esi\n ja 1f\n xor %r8d, %r8d\n add %edi, %edi\n"
		      "mov %r8d, %ecx\n .byte 0x0f, 0x01, 0xee\n mov $3, %edx\n mov %edi, %ecx\n"
		      "mov %eax, %r9d\n shl %cl, %edx\n shl %cl, %esi\n mov %r8d, %ecx\n mov %edx, %eax\n"
		      "mov %r8d, %edx\n not %eax\n and %r9d, %eax\n or %esi, %eax\n"
		      SITE(c_glibc) WRPKRU "xor %eax, %eax\n ret\n 1: mov $-1, %eax\n ret\n")
	/* hidden in an immediate: the attacker's EAX */
	CASE(c_hidden, "ret\n .byte 0xb8\n" SITE(c_hidden) WRPKRU ".byte 0\n ret\n")
	/* a jump: the straight path needs EDI, the jump's does not */
	CASE(c_jump, "xor %eax, %eax\n" ZERO_CD "jmp c_jump_site\n int3\n mov %edi, %eax\n"
		     SITE(c_jump) WRPKRU)
	CASE(c_fixed, "mov c_lo(%rip), %eax\n" ZERO_CD SITE(c_fixed) WRPKRU)
	CASE(c_reg_load, "ret\n mov 8(%rdi), %eax\n" SITE(c_reg_load) WRPKRU)
	CASE(c_call, "call c_const\n" SITE(c_call) WRPKRU)
	CASE(c_rdpkru, ".byte 0x0f, 0x01, 0xee\n and $0xfffffff3, %eax\n" SITE(c_rdpkru) WRPKRU)
	/* and with a constant on the attacker's EAX: keys opened whatever it is */
	CASE(c_and_mask, "ret\n and $0xc, %eax\n" SITE(c_and_mask) WRPKRU)
	CASE(c_or_mask, "ret\n or $0xfffffff0, %eax\n" SITE(c_or_mask) WRPKRU)
	CASE(c_vex, "mov $7, %eax\n vzeroupper\n vmovdqu %ymm0, (%rsp)\n vmovdqu64 %zmm1, 64(%rsp)\n"
		    "vpaddd %xmm1, %xmm2, %xmm3\n" SITE(c_vex) WRPKRU)
	/* memory the path writes */
	CASE(m_push_pop, "push $0\n pop %rax\n" SITE(m_push_pop) WRPKRU)
	CASE(m_rsp_slot, "movl $0, -4(%rsp)\n mov -4(%rsp), %eax\n" SITE(m_rsp_slot) WRPKRU)
	CASE(m_rbp_slot, "push %rbp\n mov %rsp, %rbp\n movl $0, -4(%rbp)\n mov -4(%rbp), %eax\n"
			 ZERO_CD SITE(m_rbp_slot) WRPKRU)
	CASE(m_via_reg, "mov %rsp, %rbx\n movl $0, 8(%rbx)\n mov 8(%rsp), %eax\n" SITE(m_via_reg) WRPKRU)
	CASE(m_arg_slot, "ret\n mov 16(%rbp), %eax\n" SITE(m_arg_slot) WRPKRU)
	CASE(m_stos, "mov %rsp, %rdi\n xor %eax, %eax\n stosl\n mov (%rsp), %eax\n" ZERO_CD SITE(m_stos) WRPKRU)
	CASE(m_adc, "ret\n adc (%rax), %eax\n" SITE(m_adc) "xrstor (%rdi)\n")
	CASE(m_sbb, "ret\n sbb $0, %eax\n" SITE(m_sbb) WRPKRU)
	CASE(m_lods, "ret\n lodsl\n add %eax, (%rdx)\n" SITE(m_lods) "xrstor (%rdi)\n")
	/* results that do not depend on their inputs */
	CASE(k_imul0, "ret\n imul $0, %eax, %eax\n" SITE(k_imul0) WRPKRU)
	CASE(k_shr_shr, "ret\n shr $16, %eax\n shr $16, %eax\n" SITE(k_shr_shr) WRPKRU)
	CASE(k_shl32, "ret\n shl $32, %rax\n" SITE(k_shl32) WRPKRU)
	CASE(k_cmov, "ret\n xor %ebx, %ebx\n test %esi, %esi\n cmove %ebx, %eax\n" SITE(k_cmov) WRPKRU)
	CASE(k_setcc, "ret\n test %esi, %esi\n sete %al\n movzbl %al, %eax\n" SITE(k_setcc) WRPKRU)
	CASE(k_mov_al, "ret\n mov $0, %al\n movzbl %al, %eax\n" SITE(k_mov_al) WRPKRU)
	CASE(k_sbb, "ret\n clc\n sbb %eax, %eax\n" SITE(k_sbb) WRPKRU)
	CASE(k_mul0, "ret\n xor %ebx, %ebx\n mul %ebx\n xor %ecx, %ecx\n" SITE(k_mul0) WRPKRU)
	CASE(k_and_reg, "ret\n xor %ebx, %ebx\n and %ebx, %eax\n" SITE(k_and_reg) WRPKRU)
	CASE(k_andn, "ret\n andn %eax, %eax, %eax\n" SITE(k_andn) WRPKRU)
	CASE(k_bzhi, "ret\n xor %ebx, %ebx\n bzhi %ebx, %eax, %eax\n" SITE(k_bzhi) WRPKRU)
	CASE(k_cwde, "ret\n mov $0, %al\n mov $0, %ah\n cwde\n" SITE(k_cwde) WRPKRU)
	CASE(k_two_ands, "ret\n and $0xf0, %eax\n and $0x0f, %eax\n" SITE(k_two_ands) WRPKRU)
	CASE(k_sub_copy, "ret\n mov %eax, %ebx\n sub %ebx, %eax\n" SITE(k_sub_copy) WRPKRU)
	/* paths the search must follow */
	CASE(p_3eeb, "xor %eax, %eax\n" ZERO_CD ".byte 0x3e, 0xeb, 1\n int3\n" SITE(p_3eeb) WRPKRU)
	CASE(p_f2e9, "xor %eax, %eax\n" ZERO_CD ".byte 0xf2, 0xe9\n .long 1\n int3\n" SITE(p_f2e9) WRPKRU)
	CASE(p_2e0f84, "xor %eax, %eax\n" ZERO_CD ".byte 0x2e, 0x0f, 0x84\n .long 1\n int3\n"
		       SITE(p_2e0f84) WRPKRU)
	CASE(p_xbegin, ZERO_CD "xbegin p_xbegin_site\n int3\n" SITE(p_xbegin) WRPKRU)
	CASE(p_far, "xor %eax, %eax\n" ZERO_CD NOPS16 NOPS16 NOPS16 NOPS16 NOPS16 SITE(p_far) WRPKRU)
	CASE(p_lea_jmp, "lea p_lea_jmp_site(%rip), %r11\n xor %eax, %eax\n" ZERO_CD "jmp *%r11\n int3\n"
			SITE(p_lea_jmp) WRPKRU)
	CASE(p_push_ret, "lea p_push_ret_site(%rip), %r11\n xor %eax, %eax\n" ZERO_CD "push %r11\n ret\n"
			 "int3\n" SITE(p_push_ret) WRPKRU)
	/* decoder corners: 66 REX.W takes a 32-bit immediate; AMD's rel16 jcc */
	CASE(d_66w_imul, "ret\n .byte 0x66, 0x48, 0x69, 0xc0\n .long 0\n" SITE(d_66w_imul) WRPKRU)
	CASE(d_66w_test, "xor %eax, %eax\n" ZERO_CD ".byte 0x66, 0x48, 0xa9\n .long 0\n"
			 SITE(d_66w_test) WRPKRU)
	CASE(d_66w_push, "xor %eax, %eax\n" ZERO_CD ".byte 0x66, 0x48, 0x68\n .long 0\n"
			 SITE(d_66w_push) WRPKRU)
	CASE(d_amd_jcc, "xor %eax, %eax\n" ZERO_CD ".byte 0x66, 0x0f, 0x84, 0, 0\n" SITE(d_amd_jcc) WRPKRU)
	/* #UD and #GP: not gadgets */
	CASE(u_66, "xor %eax, %eax\n" ZERO_CD ".byte 0x66\n" SITE(u_66) WRPKRU)
	CASE(u_f3, "xor %eax, %eax\n" ZERO_CD ".byte 0xf3\n" SITE(u_f3) WRPKRU)
	CASE(u_lock, "xor %eax, %eax\n" ZERO_CD ".byte 0xf0\n" SITE(u_lock) WRPKRU)
	CASE(u_ecx, "xor %eax, %eax\n mov $1, %ecx\n xor %edx, %edx\n" SITE(u_ecx) WRPKRU)
	CASE(u_edx, "xor %eax, %eax\n xor %ecx, %ecx\n mov $2, %edx\n" SITE(u_edx) WRPKRU)
	CASE(u_xr_66, "mov $0x200, %eax\n xor %edx, %edx\n .byte 0x66\n" SITE(u_xr_66) "xrstor (%rdi)\n")
	/* XRSTOR: bit 9 of EAX */
	CASE(c_ldso, "ret\n mov $0xee, %eax\n xor %edx, %edx\n" SITE(c_ldso) "xrstor 0x40(%rsp)\n")
	CASE(c_xr_bit, "mov $0x200, %eax\n xor %edx, %edx\n" SITE(c_xr_bit) "xrstor (%rdi)\n")
	CASE(c_xr_ax, "mov $0x200, %ax\n" SITE(c_xr_ax) "xrstor (%rdi)\n")
	CASE(c_xr_ah, "mov $2, %ah\n" SITE(c_xr_ah) "xrstor (%rdi)\n")
	CASE(c_xr_or, "ret\n or $0x2ff, %eax\n" SITE(c_xr_or) "xrstor (%rdi)\n")
	CASE(c_xr_rex, "mov $0x200, %eax\n xor %edx, %edx\n" SITE(c_xr_rex) "xrstor64 (%rdi)\n")
	CASE(c_xr_bts, "ret\n bts $9, %eax\n" SITE(c_xr_bts) "xrstor (%rdi)\n")
	CASE(c_xr_push, "push $0x200\n pop %rax\n" SITE(c_xr_push) "xrstor (%rdi)\n")
	CASE(c_xr_sbb, "ret\n stc\n sbb %eax, %eax\n and $0x200, %eax\n" SITE(c_xr_sbb) "xrstor (%rdi)\n")
	CASE(c_xr_reg, "ret\n mov %esi, %eax\n" SITE(c_xr_reg) "xrstor (%rdi)\n")
	CASE(c_xr_and, "ret\n and $0xff, %eax\n" SITE(c_xr_and) "xrstor (%rdi)\n")
	CASE(c_xr_zx, "ret\n movzbl %sil, %eax\n" SITE(c_xr_zx) "xrstor (%rdi)\n")
	".globl c_hi\nc_hi: int3\n"
	".text\n");

extern const unsigned char c_lo[], c_hi[];

/* All cases as one range, as the scan sees an executable segment. */
static struct mpk_code code;
static int ncases;

#define ROP 0
#define GADGET 1
#define UNSURE 2 /* gadget, the search ran out of room */

struct plant {
	const unsigned char *code;
	size_t len;
};

/* In a child: the code alone on an executable page, then lock.  0 locked,
 * 1 refused (EPERM, nothing applied), 2 anything else. */
static int try_lock(void *arg)
{
	const struct plant *c = arg;
	if (!pit_plant(c->code, c->len))
		return 2;
	if (!mpk_lockdown(MPK_LOCK_SCAN | MPK_LOCK_ERRNO))
		return 0;
	return errno == EPERM && mpk_lockdown_flags() == -1 ? 1 : 2;
}

static int lock_with(const unsigned char *bytes, size_t len)
{
	struct plant c = { bytes, len };
	return t_child_status(try_lock, &c);
}

static void expect(const char *name, const unsigned char *start, const unsigned char *site, int want)
{
	struct mpk_class c;
	int kind = 0;

	ncases++;
	if (!mpk__gadget_at(site, &kind)) {
		t_fail("%s: no WRPKRU or XRSTOR at the site", name);
		return;
	}
	mpk__scan_class(&code, (size_t)(site - c_lo), kind, &c);
	int got = c.cls == MPK_SITE_ROP ? ROP : c.unsure ? UNSURE : GADGET;
	static const char *const names[] = { "rop", "gadget", "gadget (unsure)" };
	if (got != want)
		t_fail("%s: class %s, want %s", name, names[got], names[want]);
	else if (want == GADGET && (c.from < (size_t)(start - c_lo) || c.from > (size_t)(site - c_lo)))
		t_fail("%s: the path starts at +%zu, outside the case (+%zu..+%zu)", name, c.from,
		       (size_t)(start - c_lo), (size_t)(site - c_lo));
	int locked = lock_with(start, (size_t)(site + 8 - start));
	if (locked != (want == ROP ? 0 : 1))
		t_fail("%s: planted alone, lockdown %s", name, locked == 0 ? "locked" : locked == 1 ? "refused" : "failed");
	printf("%-12s %-6s %-16s %zu states, lockdown %s\n", name, mpk__gadget_kind_name(kind), names[got],
	       c.nodes, locked == 0 ? "locked" : locked == 1 ? "refused" : "failed");
}

#define E(n, want)                                                                   \
	do {                                                                         \
		extern const unsigned char n[], n##_site[];                          \
		expect(#n, n, n##_site, want);                                      \
	} while (0)

int main(void)
{
	code = (struct mpk_code){ .bytes = c_lo, .len = (size_t)(c_hi + 1 - c_lo), .addr = (uintptr_t)c_lo };

	E(c_const, GADGET);
	E(c_args, ROP);
	E(c_glibc, ROP);
	E(c_hidden, ROP);
	E(c_jump, GADGET);
	E(c_fixed, GADGET);
	E(c_reg_load, ROP);
	E(c_call, GADGET);
	E(c_rdpkru, GADGET);
	E(c_and_mask, GADGET);
	E(c_or_mask, ROP);
	E(c_vex, GADGET);

	E(m_push_pop, GADGET);
	E(m_rsp_slot, GADGET);
	E(m_rbp_slot, GADGET);
	E(m_via_reg, GADGET);
	E(m_arg_slot, ROP);
	E(m_lods, ROP);
	E(m_adc, ROP);
	E(m_stos, GADGET);
	E(m_sbb, GADGET); /* bit 0 can be forced: x - cf(x) */

	E(k_imul0, GADGET);
	E(k_shr_shr, GADGET);
	E(k_shl32, GADGET);
	E(k_cmov, GADGET);
	E(k_setcc, GADGET);
	E(k_mov_al, GADGET);
	E(k_sbb, GADGET);
	E(k_mul0, GADGET);
	E(k_and_reg, GADGET);
	E(k_andn, GADGET);
	E(k_bzhi, GADGET);
	E(k_cwde, GADGET);
	E(k_two_ands, GADGET);
	E(k_sub_copy, GADGET);

	E(p_3eeb, GADGET);
	E(p_f2e9, GADGET);
	E(p_2e0f84, GADGET);
	E(p_xbegin, GADGET);
	E(p_far, UNSURE);
	E(p_lea_jmp, GADGET);
	E(p_push_ret, GADGET);

	E(d_66w_imul, GADGET);
	E(d_66w_test, GADGET);
	E(d_66w_push, GADGET);
	E(d_amd_jcc, GADGET);

	E(u_66, ROP);
	E(u_f3, ROP);
	E(u_lock, ROP);
	E(u_ecx, ROP);
	E(u_edx, ROP);
	E(u_xr_66, ROP);

	E(c_ldso, ROP);
	E(c_xr_bit, GADGET);
	E(c_xr_ax, GADGET);
	E(c_xr_ah, GADGET);
	E(c_xr_or, GADGET);
	E(c_xr_bts, GADGET);
	E(c_xr_push, GADGET);
	E(c_xr_sbb, GADGET);
	E(c_xr_reg, ROP);
	E(c_xr_and, ROP);
	E(c_xr_zx, ROP);

	/* XRSTOR64 entered at its REX prefix: the same path */
	extern const unsigned char c_xr_rex[], c_xr_rex_site[];
	expect("c_xr_rex", c_xr_rex, c_xr_rex_site + 1, GADGET);
	printf("%d cases\n", ncases);
	mpk__scan_code_done(&code);
	return t_done();
}
