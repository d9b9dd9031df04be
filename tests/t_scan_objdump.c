/* SPDX-License-Identifier: MIT */
/*
 * The scan's decoder (src/shared/insn.c) against an independent one,
 * objdump's (binutils, Intel's 64-bit semantics: -M intel64): random bytes
 * (a fixed seed, then one from the clock, printed; SCAN_OBJDUMP_SEED
 * repeats one), ld.so's and
 * libmpkit.so's code, disassembled linearly by objdump; at every address
 * objdump decodes, an instruction both decoders know must have the same
 * length.  Invalid bytes ("(bad)"), and what only one of them knows, are
 * counted, not compared.  Skips where objdump is not installed (the VM).
 */
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include "t.h"
#include "insn.h"

struct tally {
	long both, differ, only_objdump, only_ours, bad, split;
};

/* objdump prints a prefix it does not fold into the instruction (a REX
 * before a legacy prefix, a repeated one...) as a line of its own; the
 * CPU ignores it as part of the next instruction.  And it prints WAIT
 * (9b) and the x87 instruction after it as one (fstsw is fwait fnstsw). */
static bool lone_prefix(const char *mn)
{
	static const char *const words[] = { "rex", "repnz", "repz", "rep", "data16", "addr32", "lock", "cs",
					     "ds", "es", "fs", "gs", "ss", "notrack", "bnd", "xacquire", "xrelease" };
	char w[32];
	int len = 0;
	while (sscanf(mn, "%31s%n", w, &len) == 1) {
		bool known = !strncmp(w, "rex.", 4);
		for (size_t k = 0; k < sizeof(words) / sizeof(words[0]) && !known; k++)
			known = !strcmp(w, words[k]);
		if (!known)
			return false;
		mn += len;
	}
	return true;
}

/* objdump the file (raw: -b binary), compare with buf[base..]. */
static void compare(const char *what, const char *args, const unsigned char *buf, size_t len, uint64_t base,
		    struct tally *t)
{
	char cmd[8192], line[1024];
	snprintf(cmd, sizeof(cmd), "objdump -M intel64 --insn-width=15 %s 2>/dev/null", args);
	FILE *p = popen(cmd, "r");
	REQUIRE(p);
	long shown = 0;
	while (fgets(line, sizeof(line), p)) {
		char *colon = strchr(line, ':'), *tab1, *tab2;
		if (!colon || line[0] != ' ' || !(tab1 = strchr(colon, '\t')))
			continue;
		unsigned long long addr = strtoull(line, NULL, 16);
		if (addr < base || addr - base >= len)
			continue;
		size_t at = (size_t)(addr - base);
		tab2 = strchr(tab1 + 1, '\t');
		int n = 0;
		for (char *q = tab1 + 1; q < (tab2 ? tab2 : line + strlen(line)); q++)
			if (q[0] != ' ' && q[0] != '\n' && q[1] && q[1] != ' ' && q[1] != '\n')
				n++, q++;
		bool bad = !tab2 || strstr(tab2, "(bad)") || strstr(tab2, ".byte");
		struct insn in;
		int ours = mpk__insn_decode(buf + at, len - at, &in);
		if (!bad && (lone_prefix(tab2 + 1) || (ours > 0 && buf[at + (size_t)ours - 1] == 0x9b))) {
			t->split++;
			continue;
		}
		if (bad) {
			t->bad++;
			t->only_ours += ours > 0;
		} else if (!ours) {
			t->only_objdump++;
			if (getenv("SCAN_OBJDUMP_SHOW"))
				fprintf(stderr, "objdump alone: %s", tab2 + 1);
		} else if (ours == n) {
			t->both++;
		} else if (at + (size_t)n < len && at + (size_t)ours < len) {
			t->differ++;
			if (shown++ < 5) {
				char hex[64] = "";
				for (int k = 0; k < 15 && at + (size_t)k < len; k++)
					snprintf(hex + 3 * k, 4, "%02x ", buf[at + (size_t)k]);
				t_fail("%s +0x%zx: objdump %d bytes, ours %d: %s| %s", what, at, n, ours, hex,
				       tab2 ? tab2 + 1 : "");
			}
		}
	}
	pclose(p);
}

static void random_bytes(unsigned seed, struct tally *t)
{
	enum { N = 1 << 16 };
	static unsigned char buf[N];
	char path[256], args[512];
	srand(seed);
	/* bias toward what decodes: prefixes, 0f maps, VEX, ModRM-heavy opcodes */
	static const unsigned char common[] = { 0x66, 0x67, 0xf2, 0xf3, 0xf0, 0x2e, 0x3e, 0x64, 0x48, 0x4c,
						0x41, 0x0f, 0x0f, 0x38, 0x3a, 0xc4, 0xc5, 0x62, 0x8b, 0x89,
						0x8d, 0xc7, 0x81, 0x83, 0xf7, 0xff, 0xe8, 0xe9, 0x68, 0x69, 0xa9 };
	for (size_t i = 0; i < N; i++)
		buf[i] = rand() % 3 ? (unsigned char)rand() : common[(unsigned)rand() % sizeof(common)];
	snprintf(path, sizeof(path), "%s/t_scan_objdump.%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
		 (int)getpid());
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	REQUIRE(fd >= 0 && write(fd, buf, N) == N && close(fd) == 0);
	snprintf(args, sizeof(args), "-D -b binary -m i386:x86-64 %s", path);
	compare("random", args, buf, N, 0, t);
	unlink(path);
}

/* The executable sections of an ELF file, at their addresses. */
static void elf_file(const char *path, struct tally *t)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		printf("%s: not here, left out\n", path);
		if (fd >= 0)
			close(fd);
		return;
	}
	const unsigned char *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	REQUIRE(m != MAP_FAILED);
	const Elf64_Ehdr *eh = (const void *)m;
	const Elf64_Shdr *sh = (const void *)(m + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_PROGBITS || !(sh[i].sh_flags & SHF_EXECINSTR))
			continue;
		char args[4200];
		snprintf(args, sizeof(args), "-d --start-address=0x%llx --stop-address=0x%llx %s",
			 (unsigned long long)sh[i].sh_addr, (unsigned long long)(sh[i].sh_addr + sh[i].sh_size),
			 path);
		compare(path, args, m + sh[i].sh_offset, sh[i].sh_size, sh[i].sh_addr, t);
	}
	munmap((void *)m, (size_t)st.st_size);
}

int main(void)
{
	if (system("objdump --version >/dev/null 2>&1") != 0)
		t_skip("objdump (binutils) is not installed");
	struct tally t = { 0 };
	unsigned seed = getenv("SCAN_OBJDUMP_SEED") ? (unsigned)strtoul(getenv("SCAN_OBJDUMP_SEED"), NULL, 0)
						    : (unsigned)time(NULL);
	random_bytes(1, &t);
	random_bytes(seed, &t);
	long random_both = t.both;
	char lib[4096];
	ssize_t n = readlink("/proc/self/exe", lib, sizeof(lib) - 32);
	REQUIRE(n > 0);
	lib[n] = 0;
	strcpy(strrchr(lib, '/'), "/scan-libmpkit.so");
	elf_file("/lib64/ld-linux-x86-64.so.2", &t);
	elf_file(lib, &t);
	printf("seed %u: %ld instructions compared (%ld of random bytes), %ld lengths differ; "
	       "%ld objdump alone knows, %ld invalid to objdump (%ld of them decoded here), "
	       "%ld prefixes objdump prints apart\n",
	       seed, t.both + t.differ, random_both, t.differ, t.only_objdump, t.bad, t.only_ours, t.split);
	CHECK(t.both > 50000);
	return t_done();
}
