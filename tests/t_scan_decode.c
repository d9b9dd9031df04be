/* SPDX-License-Identifier: MIT */
/*
 * The scan's x86-64 decoder (src/shared/insn.c) on real compiler output: every
 * function the C library this test runs with exports (.dynsym, sized), and
 * every function of this test itself (.symtab: mpkit's own code, with its
 * inline assembly), decoded instruction after instruction from its first
 * byte, must end exactly at its last: one wrong length and the decoding
 * drifts off the instruction boundaries.  A few instructions are also
 * checked for what they write, and whether they read the memory they
 * write (watch.c reports a read-modify-write's read too).
 */
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "t.h"
#include "insn.h"

struct counts {
	long funcs, exact, insns;
};

/* Decode each sized function symbol of the ELF file at path. */
static void decode_file(const char *path, struct counts *c)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	REQUIRE(fd >= 0 && fstat(fd, &st) == 0);
	const unsigned char *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	REQUIRE(m != MAP_FAILED);
	const Elf64_Ehdr *eh = (const void *)m;
	const Elf64_Shdr *sh = (const void *)(m + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM)
			continue;
		const Elf64_Sym *sym = (const void *)(m + sh[i].sh_offset);
		const char *names = (const char *)m + sh[sh[i].sh_link].sh_offset;
		for (size_t k = 0; k < sh[i].sh_size / sizeof(*sym); k++) {
			const Elf64_Sym *s = &sym[k];
			if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || !s->st_size || !s->st_shndx ||
			    s->st_shndx >= eh->e_shnum || sh[s->st_shndx].sh_type != SHT_PROGBITS)
				continue;
			const Elf64_Shdr *sec = &sh[s->st_shndx];
			const unsigned char *p = m + sec->sh_offset + (s->st_value - sec->sh_addr);
			const unsigned char *end = p + s->st_size, *start = p;
			struct insn in;
			int len;
			while (p < end && (len = mpk__insn_decode(p, (size_t)(end - p), &in)) > 0) {
				p += len;
				c->insns++;
			}
			c->funcs++;
			if (p == end)
				c->exact++;
			else if (c->funcs - c->exact <= 5)
				t_fail("%s: %s: decoding stops at +0x%zx (%02x %02x %02x %02x)", path,
				       names + s->st_name, (size_t)(p - start), p[0], p[1], p[2], p[3]);
		}
	}
	munmap((void *)m, (size_t)st.st_size);
}

/* The path of the mapped file whose name contains name. */
static bool mapped(const char *name, char *path, size_t size)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "re");
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		if (p && strstr(p, name)) {
			p[strcspn(p, "\n")] = 0;
			snprintf(path, size, "%s", p);
			found = true;
		}
	}
	fclose(f);
	return found;
}

static const struct insn_dst *writes(const struct insn *in, unsigned reg)
{
	for (unsigned i = 0; i < in->ndst; i++)
		if (in->dst[i].reg == reg)
			return &in->dst[i];
	return NULL;
}

/* Most of mpkit linked in: its functions are decoded too. */
static void *volatile keep_linked[] = { (void *)mpk_lockdown, (void *)mpk_watch, (void *)mpk_heap_create,
					 (void *)mpk_set_all, (void *)mpk_code_alloc, (void *)mpk_secret_alloc };

int main(void)
{
	char libc[4096];

	(void)keep_linked;
	struct counts c = { 0 }, self = { 0 };
	struct insn in;

	if (!mapped("libc.so", libc, sizeof(libc)) && !mapped("libc-", libc, sizeof(libc)))
		t_skip("no C library mapped from a file (static?)");
	decode_file(libc, &c);
	decode_file("/proc/self/exe", &self);
	printf("%s: %ld of %ld functions decode exactly (%ld instructions)\n", libc, c.exact, c.funcs,
	       c.insns);
	printf("this test: %ld of %ld functions (%ld instructions)\n", self.exact, self.funcs,
	       self.insns);
	CHECK(c.funcs > 100 && c.exact == c.funcs);
	CHECK(self.funcs > 100 && self.exact == self.funcs);

	/* mov $0x200, %eax; xrstor64 (%rdi); rdpkru; movzbl %sil, %eax;
	 * xor %r9d, %r9d; jne .-0x10; call; ud2; vzeroupper */
	static const unsigned char mov[] = { 0xb8, 0x00, 0x02, 0x00, 0x00 },
		xr[] = { 0x48, 0x0f, 0xae, 0x2f }, rd[] = { 0x0f, 0x01, 0xee },
		zx[] = { 0x40, 0x0f, 0xb6, 0xc6 }, x9[] = { 0x45, 0x31, 0xc9 },
		jne[] = { 0x0f, 0x85, 0xea, 0xff, 0xff, 0xff }, call[] = { 0xe8, 0, 0, 0, 0 },
		ud2[] = { 0x0f, 0x0b }, vz[] = { 0xc5, 0xf8, 0x77 };
	const struct insn_dst *d;
	CHECK(mpk__insn_decode(mov, sizeof(mov), &in) == 5 && (d = writes(&in, INSN_RAX)) &&
	      d->kind == DST_CONST && d->imm == 0x200);
	CHECK(mpk__insn_decode(xr, sizeof(xr), &in) == 4 && in.ndst == 0 && in.flow == FLOW_NEXT);
	CHECK(mpk__insn_decode(rd, sizeof(rd), &in) == 3 && (d = writes(&in, INSN_RAX)) &&
	      d->kind == DST_FIXED && writes(&in, INSN_RDX));
	CHECK(mpk__insn_decode(zx, sizeof(zx), &in) == 4 && (d = writes(&in, INSN_RAX)) &&
	      d->kind == DST_ZX8 && d->src == 1u << INSN_RSI);
	CHECK(mpk__insn_decode(x9, sizeof(x9), &in) == 3 && (d = writes(&in, 9)) && d->kind == DST_CONST);
	CHECK(mpk__insn_decode(jne, sizeof(jne), &in) == 6 && in.flow == FLOW_COND && in.has_target &&
	      in.target == -0x10);
	CHECK(mpk__insn_decode(call, sizeof(call), &in) == 5 && in.flow == FLOW_CALL && in.target == 5);
	CHECK(mpk__insn_decode(ud2, sizeof(ud2), &in) == 2 && in.flow == FLOW_STOP);
	CHECK(mpk__insn_decode(vz, sizeof(vz), &in) == 3 && in.ndst == 0);
	CHECK(mpk__insn_decode(mov, 4, &in) == 0); /* cut short */

	/* Read-modify-writes of memory: addq $1,(%rdi); lock xadd %eax,(%rdx);
	 * incl 8(%rsp); notq (%rax); xchg %rcx,(%rsi); lock cmpxchg %ecx,(%rdi);
	 * shlq (%rax); btsq $3,(%rax).  Plain stores and a compare do not:
	 * mov %rax,(%rdi); movl $1,(%rdi); cmp %eax,(%rdi); setne (%rdi); and
	 * register forms neither: add %eax,%ecx; inc %eax. */
	static const unsigned char rmw[][6] = {
		{ 0x48, 0x83, 0x07, 0x01 }, { 0xf0, 0x0f, 0xc1, 0x02 }, { 0xff, 0x44, 0x24, 0x08 },
		{ 0x48, 0xf7, 0x10 }, { 0x48, 0x87, 0x0e }, { 0xf0, 0x0f, 0xb1, 0x0f },
		{ 0x48, 0xd1, 0x20 }, { 0x48, 0x0f, 0xba, 0x28, 0x03 },
	}, plain[][6] = {
		{ 0x48, 0x89, 0x07 }, { 0xc7, 0x07, 0x01, 0, 0, 0 }, { 0x39, 0x07 },
		{ 0x0f, 0x95, 0x07 }, { 0x01, 0xc1 }, { 0xff, 0xc0 },
	};
	for (size_t i = 0; i < sizeof(rmw) / sizeof(rmw[0]); i++)
		if (!(mpk__insn_decode(rmw[i], sizeof(rmw[i]), &in) > 0 && in.mem_rmw))
			t_fail("read-modify-write %zu: not taken as one", i);
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		if (!(mpk__insn_decode(plain[i], sizeof(plain[i]), &in) > 0 && !in.mem_rmw))
			t_fail("plain access %zu: taken as a read-modify-write", i);
	return t_done();
}
