/* SPDX-License-Identifier: MIT */
/*
 * The gadget scan over this very process (mpk__scan_pid(0)) and over its
 * executable file: deliberate sites planted here (a WRPKRU and an XRSTOR
 * hidden in the immediates of ordinary instructions, so at odd offsets, and
 * a WRPKRU as data bytes in the text section: ROP-only, EAX is the
 * attacker's; and an inline WRPKRU after xor %eax,%eax: a gadget) are
 * reported with their symbols and classes; an LFENCE (0f ae e8: the same
 * opcode with mod == 3) and the same bytes in read-only data are not; every
 * WRPKRU site of mpkit (linked in from libmpkit.a) is found and marked
 * mpkit's, and no other site is but another mpkit's (libmpkit.so, which
 * the drop-in allocator brings when the suite runs under it); the vDSO is
 * read and scanned.
 */
#include "t.h"
#include "scan.h"

/* b8 0f 01 ef 00: mov $0xef010f, %eax hides a WRPKRU at +1;
 * b8 0f ae 29 00: mov $0x29ae0f, %eax hides XRSTOR (%rcx) at +1;
 * 0f ae e8: LFENCE, not a gadget; then a WRPKRU as data. */
__asm__(".text\n"
	".globl gadget_code\n.type gadget_code, @function\n"
	"gadget_code:\n\t"
	".byte 0xb8, 0x0f, 0x01, 0xef, 0x00\n\t"
	".byte 0xb8, 0x0f, 0xae, 0x29, 0x00\n\t"
	"lfence\n\t"
	"ret\n"
	".size gadget_code, . - gadget_code\n"
	".globl gadget_data\n.type gadget_data, @object\n"
	"gadget_data:\n\t"
	".byte 0x90, 0x90, 0x0f, 0x01, 0xef, 0x90\n"
	".size gadget_data, . - gadget_data\n"
	".globl gadget_inline\n.type gadget_inline, @function\n"
	"gadget_inline:\n\t"
	"xorl %eax, %eax\n\txorl %ecx, %ecx\n\txorl %edx, %edx\n\t"
	".byte 0x0f, 0x01, 0xef\n\t"
	"ret\n"
	".size gadget_inline, . - gadget_inline\n"
	".section .rodata\n"
	".globl gadget_rodata\n"
	"gadget_rodata:\n\t"
	".byte 0x0f, 0x01, 0xef, 0x0f, 0xae, 0x29\n"
	".text\n");
extern const unsigned char gadget_code[], gadget_data[], gadget_rodata[], gadget_inline[];
extern const int32_t __start_mpk_wrpkru_sites[] __attribute__((visibility("hidden")));
extern const int32_t __stop_mpk_wrpkru_sites[] __attribute__((visibility("hidden")));
extern const char mpk_arch_wrpkru_fail[] __attribute__((visibility("hidden")));

#define MAX_G 256
struct seen {
	struct mpk_gadget g[MAX_G];
	char sym[MAX_G][64];
	bool other_mpkit[MAX_G]; /* in libmpkit.so, not this program's copy */
	int n;
	bool vdso;
	uint64_t vdso_len;
};

static int on_gadget(const struct mpk_gadget *g, void *arg)
{
	struct seen *s = arg;
	if (s->n < MAX_G) {
		s->g[s->n] = *g;
		snprintf(s->sym[s->n], 64, "%s", g->sym ? g->sym : "");
		s->g[s->n].sym = s->sym[s->n];
		s->other_mpkit[s->n] = g->where && strstr(g->where, "/libmpkit.so");
		s->g[s->n].where = NULL;
		s->n++;
	}
	return 0;
}

static void on_mapping(const char *where, uint64_t addr, uint64_t len, uint64_t nread, void *arg)
{
	struct seen *s = arg;
	(void)addr;
	if (!strcmp(where, "[vdso]")) {
		s->vdso = nread == len && len > 0;
		s->vdso_len = len;
	}
}

static const struct mpk_gadget *find(const struct seen *s, uint64_t addr)
{
	for (int i = 0; i < s->n; i++)
		if (s->g[i].addr == addr)
			return &s->g[i];
	return NULL;
}

/* Link mpkit's rights code in: its sites are what is checked below. */
static void *volatile keep_linked[] = { (void *)mpk_set, (void *)mpk_enter, (void *)mpk_leave,
					 (void *)mpk_set_all, (void *)mpk_fault_handler_install };

int main(void)
{
	static struct seen s;

	(void)keep_linked;
	struct mpk_scan_cb cb = { on_gadget, on_mapping, &s };

	long foreign = mpk__scan_pid(0, &cb);
	REQUIRE(foreign >= 0);

	const struct mpk_gadget *g = find(&s, (uintptr_t)gadget_code + 1);
	CHECK(g && g->kind == MPK_GADGET_WRPKRU && g->cls == MPK_SITE_ROP && !g->mpkit &&
	      !strcmp(g->sym, "gadget_code") && g->sym_off == 1);
	g = find(&s, (uintptr_t)gadget_code + 6);
	CHECK(g && g->kind == MPK_GADGET_XRSTOR && g->cls == MPK_SITE_ROP &&
	      !strcmp(g->sym, "gadget_code") && g->sym_off == 6);
	CHECK(!find(&s, (uintptr_t)gadget_code + 10)); /* LFENCE */
	g = find(&s, (uintptr_t)gadget_data + 2);
	CHECK(g && g->kind == MPK_GADGET_WRPKRU && g->cls == MPK_SITE_ROP &&
	      !strcmp(g->sym, "gadget_data"));
	g = find(&s, (uintptr_t)gadget_inline + 6);
	CHECK(g && g->kind == MPK_GADGET_WRPKRU && g->cls == MPK_SITE_GADGET && !g->unsure &&
	      g->from == (uintptr_t)gadget_inline && !strcmp(g->sym, "gadget_inline"));
	CHECK(!find(&s, (uintptr_t)gadget_rodata));     /* not executable */
	CHECK(!find(&s, (uintptr_t)gadget_rodata + 3));

	/* mpkit's sites: each one found and marked, and no other gadget is. */
	int nsites = (int)(__stop_mpk_wrpkru_sites - __start_mpk_wrpkru_sites), marked = 0;
	CHECK(nsites >= 5);
	for (int i = 0; i < nsites; i++) {
		uintptr_t site = (uintptr_t)&__start_mpk_wrpkru_sites[i] + (intptr_t)__start_mpk_wrpkru_sites[i];
		g = find(&s, site);
		CHECK(g && g->kind == MPK_GADGET_WRPKRU && g->mpkit && g->cls == MPK_SITE_MPKIT && g->sym[0]);
		uintptr_t lo = site < (uintptr_t)mpk_arch_wrpkru_fail ? site : (uintptr_t)mpk_arch_wrpkru_fail;
		uintptr_t hi = site > (uintptr_t)mpk_arch_wrpkru_fail ? site : (uintptr_t)mpk_arch_wrpkru_fail;
		CHECK(mpk__gate_check_at((const unsigned char *)lo - 8, hi + 64 - lo + 8, site - lo + 8));
		/* the check follows: cmp r32, %eax (REX for r8d..r15d), then jne */
		const unsigned char *c = (const unsigned char *)site + 3;
		bool rex_r = (c[0] & 0xf4) == 0x44;
		c += (c[0] & 0xf0) == 0x40;
		CHECK(c[0] == 0x39 && (c[1] & 0xc7) == 0xc0 && c[2] == 0x0f && c[3] == 0x85);
		/* ...with a register other than EAX itself */
		CHECK(rex_r || ((c[1] >> 3) & 7) != 0);
	}
	int gadgets = 0, rop = 0;
	for (int i = 0; i < s.n; i++) {
		if (s.other_mpkit[i]) {
			CHECK(s.g[i].mpkit);
			continue;
		}
		marked += s.g[i].mpkit;
		gadgets += s.g[i].cls == MPK_SITE_GADGET;
		rop += s.g[i].cls == MPK_SITE_ROP;
	}
	CHECK(marked == nsites);
	CHECK(foreign == gadgets && gadgets == 1); /* gadget_inline, and not glibc's */
	int others = 0;
	for (int i = 0; i < s.n; i++)
		others += s.other_mpkit[i];
	CHECK(rop >= 3 && marked + rop + gadgets + others == s.n);
	CHECK(s.vdso);

	/* The file on disk: the same gadgets at their ELF addresses. */
	static struct seen f;
	struct mpk_scan_cb fcb = { on_gadget, NULL, &f };
	long ff = mpk__scan_file("/proc/self/exe", &fcb);
	CHECK(ff == 1);
	int fmarked = 0, named = 0;
	for (int i = 0; i < f.n; i++) {
		fmarked += f.g[i].mpkit;
		named += !strcmp(f.sym[i], "gadget_code") || !strcmp(f.sym[i], "gadget_data") ||
			 !strcmp(f.sym[i], "gadget_inline");
	}
	CHECK(fmarked == nsites && named == 4 && f.n == nsites + 4);
	CHECK(mpk__scan_file("/dev/null", &fcb) == -1);
	printf("%d gadgets in this process, %d of them mpkit's sites, vDSO %llu bytes scanned\n", s.n,
	       marked, (unsigned long long)s.vdso_len);
	return t_done();
}
