/* SPDX-License-Identifier: MIT */
/*
 * `mpkit scan`: its classes, its exit status and its symbol names.
 *   - this process's C library and dynamic loader, and this very process
 *     (--pid): glibc's pkey_set and ld.so's trampolines are "ROP only"
 *     (the attacker must set EAX), exit 0 (musl, which has no pkey
 *     calls: its C library has no WRPKRU at all);
 *   - a statically linked program (t_scan_lockdown_static): mpkit's sites,
 *     and with glibc ld.so's trampolines too, named, ROP only, exit 0;
 *   - a program with an inline WRPKRU (t_pit_wrpkru_inline): a GADGET in
 *     its function attempt(), with the path's start; exit 1 (text and JSON);
 *   - libmpkit.so with its .symtab gone (as stripped): its sites in static
 *     functions are "?", never the version node MPKIT_0.1 (an absolute
 *     symbol), and all are mpkit's checked sites;
 *   - where the debug file of ld.so is installed (libc6-dbg), its
 *     trampolines are named from it.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "t_cli.h"

static void want(const struct t_cli *r, const char *what, const char *s, bool yes)
{
	if (!!strstr(r->out, s) != yes)
		t_fail("%s: want %s\"%s\" in:\n%s", what, yes ? "" : "no ", s, r->out);
}

/* The path of the mapped file whose name contains name, or NULL. */
static const char *mapped(const char *name)
{
	static char paths[2][4096];
	static int n;
	char line[4096];
	const char *found = NULL;
	FILE *f = fopen("/proc/self/maps", "re");

	while (f && !found && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		if (p && strstr(p, name)) {
			p[strcspn(p, "\n")] = 0;
			snprintf(paths[n & 1], sizeof(paths[0]), "%s", p);
			found = paths[n++ & 1];
		}
	}
	if (f)
		fclose(f);
	return found;
}

/* The whole file at path, in memory (*size bytes), or NULL. */
static unsigned char *slurp(const char *path, size_t *size)
{
	struct stat st;
	int in = open(path, O_RDONLY | O_CLOEXEC);
	if (in < 0 || fstat(in, &st))
		return NULL;
	unsigned char *b = malloc((size_t)st.st_size);
	REQUIRE(b && read(in, b, (size_t)st.st_size) == st.st_size);
	close(in);
	*size = (size_t)st.st_size;
	return b;
}

/* The separate debug file an ELF file's build ID names, if installed. */
static bool debug_file(const char *path)
{
	size_t size;
	unsigned char *b = slurp(path, &size);
	bool found = false;
	if (!b)
		return false;
	Elf64_Ehdr *eh = (Elf64_Ehdr *)b;
	Elf64_Shdr *sh = (Elf64_Shdr *)(b + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum && !found; i++) {
		Elf64_Nhdr *n = (Elf64_Nhdr *)(b + sh[i].sh_offset);
		if (sh[i].sh_type != SHT_NOTE || n->n_type != NT_GNU_BUILD_ID || n->n_namesz != 4)
			continue;
		const unsigned char *id = (const unsigned char *)(n + 1) + 4;
		char dbg[256];
		int k = snprintf(dbg, sizeof(dbg), "/usr/lib/debug/.build-id/%02x/", id[0]);
		for (unsigned j = 1; j < n->n_descsz && k < 200; j++)
			k += snprintf(dbg + k, sizeof(dbg) - (size_t)k, "%02x", id[j]);
		snprintf(dbg + k, sizeof(dbg) - (size_t)k, ".debug");
		found = access(dbg, R_OK) == 0;
	}
	free(b);
	return found;
}

/* A copy of path whose symbol table is gone (section type SHT_NULL), as
 * strip leaves it; its name in out. */
static bool stripped_copy(const char *path, char *out, size_t size)
{
	size_t len;
	unsigned char *b = slurp(path, &len);
	if (!b)
		return false;
	Elf64_Ehdr *eh = (Elf64_Ehdr *)b;
	Elf64_Shdr *sh = (Elf64_Shdr *)(b + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++)
		if (sh[i].sh_type == SHT_SYMTAB)
			sh[i].sh_type = SHT_NULL;
	snprintf(out, size, "%s/mpkit-scan-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	int fd = mkstemp(out);
	REQUIRE(fd >= 0 && write(fd, b, len) == (ssize_t)len);
	close(fd);
	free(b);
	return true;
}

static void *volatile keep_linked = (void *)mpk_set; /* mpkit's sites in this process */

int main(void)
{
	struct t_cli r;

	(void)keep_linked;
	char pid[16], copy[4096];
	const char *libc = mapped("libc.so"), *ldso = mapped("ld-linux");

#ifdef __GLIBC__
	if (!libc || !ldso)
		t_skip("no glibc mapped from files here");
	t_cli_run(&r, NULL, (const char *[]){ "scan", libc, ldso, NULL });
	CHECK(r.status == 0);
	want(&r, "glibc", "GADGET", false);
	want(&r, "glibc", "0 gadgets", true);
	want(&r, "glibc", "pkey_set+0x", true); /* glibc 2.27 and later */
	want(&r, "glibc", "ROP only (EAX from the attacker)", true);
	want(&r, "ld.so", "ROP only (EAX bit 9 and the image from the attacker)", true);
#else
	/* musl has no pkey calls: its C library and loader (one file) hold
	 * no WRPKRU at all. */
	if (!libc)
		t_skip("no C library mapped from a file here");
	t_cli_run(&r, NULL, (const char *[]){ "scan", libc, NULL });
	CHECK(r.status == 0);
	want(&r, "musl", "\n0 sites: 0 mpkit, 0 rop only, 0 gadgets\n", true);
#endif

	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* Yama: for --pid */
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	t_cli_run(&r, NULL, (const char *[]){ "scan", "--pid", pid, NULL });
	CHECK(r.status == 0);
	want(&r, "--pid", "mpkit site (checked)", true);
	want(&r, "--pid", "GADGET", false);

	t_cli_run(&r, NULL, (const char *[]){ "scan", "./t_scan_lockdown_static", NULL });
	CHECK(r.status == 0);
#ifdef __GLIBC__
	want(&r, "static", "_dl_runtime_resolve_xsave+0x", true);
#endif
	want(&r, "static", "mpkit site (checked)", true);
	want(&r, "static", "GADGET", false);

	t_cli_run(&r, NULL, (const char *[]){ "scan", "./t_pit_wrpkru_inline", NULL });
	CHECK(r.status == 1);
	want(&r, "inline", "GADGET (the code sets the value), from 0x", true);
	want(&r, "inline", "attempt+0x", true);
	want(&r, "inline", "1 gadget\n", true);
	t_cli_run(&r, NULL, (const char *[]){ "scan", "--json", "./t_pit_wrpkru_inline", NULL });
	CHECK(r.status == 1);
	want(&r, "json", "\"class\": \"gadget\"", true);
	want(&r, "json", "\"class\": \"mpkit\"", true);
	want(&r, "json", "\"from\": \"0x", true);
	want(&r, "json", "\"classes\": {\"mpkit\": ", true);

	REQUIRE(stripped_copy("./scan-libmpkit.so", copy, sizeof(copy)));
	t_cli_run(&r, NULL, (const char *[]){ "scan", copy, NULL });
	unlink(copy);
	CHECK(r.status == 0);
	want(&r, "stripped", "MPKIT_", false);
	want(&r, "stripped", " ?  ", true);
	want(&r, "stripped", "ROP only", false);
	want(&r, "stripped", "mpk_set+0x", true); /* exported: .dynsym */

	/* ld.so is stripped: its debug file, where installed, names them */
	if (!ldso) {
		printf("no ld.so (the C library is not glibc)\n");
	} else if (debug_file(ldso)) {
		t_cli_run(&r, NULL, (const char *[]){ "scan", ldso, NULL });
		want(&r, "ld.so", "_dl_runtime_resolve_xsave", true);
	} else {
		printf("no debug file for %s here: its trampolines are not named\n", ldso);
	}
	return t_done();
}
