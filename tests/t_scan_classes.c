/* SPDX-License-Identifier: MIT */
/*
 * The scan's classes (src/shared/scan_class.c) on code the assembler
 * writes: each case is a few instructions ending in a WRPKRU or an XRSTOR,
 * put in read-only data (so that this process has no such gadget of its
 * own) and classified as the scan would.  A path on which the code itself
 * gives EAX its value (a constant, a load from a fixed address, RDPKRU, a
 * call's result; reached straight, through a jump or by an entry at a
 * prefix) is a gadget, with the start of that path; where every way in
 * needs EAX from the attacker (an argument, a load through a register, the
 * middle of another instruction), the site is ROP-only; for XRSTOR only
 * bit 9 of EAX counts (ld.so's trampolines ask for 0xee: no PKRU).
 */
#include "t.h"
#include "scan.h"

#define WRPKRU ".byte 0x0f, 0x01, 0xef\n"
#define CASE(name, body)                                                     \
	".globl " #name "\n" #name ":\n" body ".globl " #name "_end\n" #name "_end:\n"

/* Each case marks its site with a label NAME_site (and its path's start,
 * where one fixes the value, with NAME_from). */
__asm__(".section .rodata\n"
	".p2align 6\n"
	/* the inline gadget: constants, straight */
	CASE(c_const, "c_const_from: xor %eax, %eax\n xor %ecx, %ecx\n xor %edx, %edx\n"
		      "c_const_site: " WRPKRU)
	/* pkey_set(): EAX from the arguments and PKRU */
	CASE(c_args, "xor %ecx, %ecx\n .byte 0x0f, 0x01, 0xee\n mov %eax, %r9d\n mov %edi, %ecx\n"
		     "mov $3, %edx\n shl %cl, %edx\n shl %cl, %esi\n not %edx\n mov %edx, %eax\n"
		     "and %r9d, %eax\n or %esi, %eax\n xor %ecx, %ecx\n xor %edx, %edx\n"
		     "c_args_site: " WRPKRU "ret\n")
	/* hidden in an immediate: the attacker's EAX */
	CASE(c_hidden, "ret\n mov $0xef010f, %eax\n ret\n")
	/* a jump: the straight path needs EDI, the jump's does not */
	CASE(c_jump, "c_jump_from: xor %eax, %eax\n jmp c_jump_site\n int3\n mov %edi, %eax\n"
		     "c_jump_site: " WRPKRU)
	/* a load from a fixed address */
	CASE(c_fixed, "c_fixed_from: mov c_const(%rip), %eax\n c_fixed_site: " WRPKRU)
	/* a load through a register */
	CASE(c_reg_load, "ret\n mov 8(%rdi), %eax\n c_reg_load_site: " WRPKRU)
	/* what a call returns */
	CASE(c_call, "c_call_from: call c_const\n c_call_site: " WRPKRU)
	/* PKRU read, a key opened: a constant mask */
	CASE(c_rdpkru, "c_rdpkru_from: .byte 0x0f, 0x01, 0xee\n and $0xfffffff3, %eax\n"
		       "c_rdpkru_site: " WRPKRU)
	/* AVX and AVX-512 in the way do not hide the constant */
	CASE(c_vex, "c_vex_from: mov $7, %eax\n vzeroupper\n vmovdqu %ymm0, (%rsp)\n"
		    "vmovdqu64 %zmm1, 64(%rsp)\n vpaddd %xmm1, %xmm2, %xmm3\n c_vex_site: " WRPKRU)
	/* ld.so's trampolines: xrstor without PKRU in the bitmap */
	CASE(c_ldso, "ret\n mov $0xee, %eax\n xor %edx, %edx\n c_ldso_site: xrstor 0x40(%rsp)\n")
	/* XRSTOR with PKRU asked for */
	CASE(c_xr_bit, "c_xr_bit_from: mov $0x200, %eax\n xor %edx, %edx\n c_xr_bit_site: xrstor (%rdi)\n")
	/* ...through a 16-bit write, an 8-bit write to AH, an OR */
	CASE(c_xr_ax, "c_xr_ax_from: mov $0x200, %ax\n c_xr_ax_site: xrstor (%rdi)\n")
	CASE(c_xr_ah, "c_xr_ah_from: mov $2, %ah\n c_xr_ah_site: xrstor (%rdi)\n")
	CASE(c_xr_or, "ret\n c_xr_or_from: or $0x2ff, %eax\n c_xr_or_site: xrstor (%rdi)\n")
	/* XRSTOR64: the way in is the REX prefix */
	CASE(c_xr_rex, "c_xr_rex_from: mov $0x200, %eax\n xor %edx, %edx\n c_xr_rex_site: xrstor64 (%rdi)\n")
	/* bit 9 from a register, or cleared */
	CASE(c_xr_reg, "ret\n mov %esi, %eax\n c_xr_reg_site: xrstor (%rdi)\n")
	CASE(c_xr_and, "ret\n and $0xff, %eax\n c_xr_and_site: xrstor (%rdi)\n")
	CASE(c_xr_zx, "ret\n movzbl %sil, %eax\n c_xr_zx_site: xrstor (%rdi)\n")
	".text\n");

#define DECL(n) extern const unsigned char n[], n##_end[]
DECL(c_const); DECL(c_args); DECL(c_hidden); DECL(c_jump); DECL(c_fixed); DECL(c_reg_load);
DECL(c_call); DECL(c_rdpkru); DECL(c_vex); DECL(c_ldso); DECL(c_xr_bit); DECL(c_xr_ax);
DECL(c_xr_ah); DECL(c_xr_or); DECL(c_xr_rex); DECL(c_xr_reg); DECL(c_xr_and); DECL(c_xr_zx);
extern const unsigned char c_const_site[], c_const_from[], c_args_site[], c_jump_site[],
	c_jump_from[], c_fixed_site[], c_fixed_from[], c_reg_load_site[], c_call_site[],
	c_call_from[], c_rdpkru_site[], c_rdpkru_from[], c_vex_site[], c_vex_from[], c_ldso_site[],
	c_xr_bit_site[], c_xr_bit_from[], c_xr_ax_site[], c_xr_ax_from[], c_xr_ah_site[],
	c_xr_ah_from[], c_xr_or_site[], c_xr_or_from[], c_xr_rex_from[], c_xr_rex_site[], c_xr_reg_site[],
	c_xr_and_site[], c_xr_zx_site[];

/* All cases as one range, as the scan sees an executable segment. */
static const unsigned char *lo = c_const, *hi = c_xr_zx_end;

static void expect(const char *name, const unsigned char *site, int cls, const unsigned char *from)
{
	struct mpk_code code = { .bytes = lo, .len = (size_t)(hi - lo) };
	struct mpk_class c;
	int kind = 0;

	if (!mpk__gadget_at(site, &kind)) {
		t_fail("%s: no WRPKRU or XRSTOR at the site", name);
		return;
	}
	mpk__scan_class(&code, (size_t)(site - lo), kind, &c);
	if (c.cls != cls || c.unsure)
		t_fail("%s: class %s%s, want %s", name, mpk__site_class_name(c.cls),
		       c.unsure ? " (unsure)" : "", mpk__site_class_name(cls));
	else if (from && c.from != (size_t)(from - lo))
		t_fail("%s: the path starts at +%zu, want +%zu", name, c.from, (size_t)(from - lo));
	printf("%-10s %-6s %s (%zu states)\n", name, mpk__gadget_kind_name(kind),
	       mpk__site_class_name(c.cls), c.nodes);
	mpk__scan_code_done(&code);
}

int main(void)
{
	expect("const", c_const_site, MPK_SITE_GADGET, c_const_from);
	expect("args", c_args_site, MPK_SITE_ROP, NULL);
	expect("hidden", c_hidden + 2, MPK_SITE_ROP, NULL);
	expect("jump", c_jump_site, MPK_SITE_GADGET, c_jump_from);
	expect("fixed", c_fixed_site, MPK_SITE_GADGET, c_fixed_from);
	expect("reg_load", c_reg_load_site, MPK_SITE_ROP, NULL);
	expect("call", c_call_site, MPK_SITE_GADGET, c_call_from);
	expect("rdpkru", c_rdpkru_site, MPK_SITE_GADGET, c_rdpkru_from);
	expect("vex", c_vex_site, MPK_SITE_GADGET, c_vex_from);
	expect("ldso", c_ldso_site, MPK_SITE_ROP, NULL);
	expect("xr_bit", c_xr_bit_site, MPK_SITE_GADGET, c_xr_bit_from);
	expect("xr_ax", c_xr_ax_site, MPK_SITE_GADGET, c_xr_ax_from);
	expect("xr_ah", c_xr_ah_site, MPK_SITE_GADGET, c_xr_ah_from);
	expect("xr_or", c_xr_or_site, MPK_SITE_GADGET, c_xr_or_from);
	expect("xr_rex", c_xr_rex_site + 1, MPK_SITE_GADGET, c_xr_rex_from); /* past REX.W */
	expect("xr_reg", c_xr_reg_site, MPK_SITE_ROP, NULL);
	expect("xr_and", c_xr_and_site, MPK_SITE_ROP, NULL);
	expect("xr_zx", c_xr_zx_site, MPK_SITE_ROP, NULL);
	return t_done();
}
