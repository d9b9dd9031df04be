/* SPDX-License-Identifier: MIT */
/*
 * The scan sees what runs, or says it cannot: a copy of this program cut
 * short inside its executable segment, and copies whose dynamic section
 * asks for text relocations (DT_TEXTREL, DF_TEXTREL), are errors
 * (EBADMSG, ENOTSUP), where the loader would map bytes the file scan never
 * read or patch the code it read; a WRPKRU listed in mpk_wrpkru_sites like
 * mpkit's own, with a compare and a jne that do not go to mpkit's failure
 * path, is not trusted as mpkit's; and code split across two adjacent
 * executable mappings (a WRPKRU cut in two, a setter in one and the WRPKRU
 * in the next) is one range to the --pid scan.
 */
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "t.h"
#include "scan.h"

/* A forged site: listed, mov/wrpkru/cmp/jne, but the jne goes elsewhere. */
__asm__(".text\n"
	".globl forged_site_fn\n.type forged_site_fn, @function\n"
	"forged_site_fn:\n\t"
	"xor %eax, %eax\n\txor %edx, %edx\n\txor %ecx, %ecx\n\tmov %eax, %esi\n\t"
	"1: .byte 0x0f, 0x01, 0xef\n\t"
	"cmp %esi, %eax\n\t"
	"jne forged_not_fail\n\t"
	"ret\n"
	"forged_not_fail: ret\n"
	".size forged_site_fn, . - forged_site_fn\n"
	".pushsection mpk_wrpkru_sites, \"a\"\n\t.balign 4\n\t.long 1b - .\n\t.popsection\n");
extern const unsigned char forged_site_fn[];

struct seen {
	int n, gadgets, mpkit;
	uint64_t want;
	const struct mpk_gadget *hit;
	struct mpk_gadget g;
	bool found;
};

static int on_gadget(const struct mpk_gadget *g, void *arg)
{
	struct seen *s = arg;
	s->n++;
	s->gadgets += g->cls == MPK_SITE_GADGET;
	s->mpkit += g->mpkit;
	if (g->addr == s->want) {
		s->g = *g;
		s->found = true;
	}
	return 0;
}

static char *self_copy(size_t *size)
{
	int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	struct stat st;
	REQUIRE(in >= 0 && fstat(in, &st) == 0);
	char *b = malloc((size_t)st.st_size);
	REQUIRE(b && read(in, b, (size_t)st.st_size) == st.st_size);
	close(in);
	*size = (size_t)st.st_size;
	return b;
}

static const char *write_copy(const char *name, const char *b, size_t size)
{
	static char path[256];
	snprintf(path, sizeof(path), "%s/t_scan_file.%d.%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
		 (int)getpid(), name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	REQUIRE(fd >= 0 && write(fd, b, size) == (ssize_t)size && close(fd) == 0);
	return path;
}

/* The dynamic section's entry with tag, in the copy b. */
static Elf64_Dyn *dyn_entry(char *b, Elf64_Sxword tag)
{
	const Elf64_Ehdr *eh = (const void *)b;
	const Elf64_Phdr *ph = (const void *)(b + eh->e_phoff);
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_DYNAMIC)
			continue;
		Elf64_Dyn *d = (void *)(b + ph[i].p_offset);
		for (; d->d_tag != DT_NULL; d++)
			if (d->d_tag == tag)
				return d;
	}
	return NULL;
}

static void file_errors(void)
{
	struct seen s = { 0 };
	struct mpk_scan_cb cb = { on_gadget, NULL, &s };
	size_t size;
	char *b = self_copy(&size);
	const Elf64_Ehdr *eh = (const void *)b;
	const Elf64_Phdr *ph = (const void *)(b + eh->e_phoff);

	/* the copy as it is scans */
	CHECK(mpk__scan_file(write_copy("whole", b, size), &cb) >= 1);
	unlink(write_copy("whole", b, size));

	/* cut inside the executable segment */
	size_t cut = 0;
	for (unsigned i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X))
			cut = ph[i].p_offset + ph[i].p_filesz / 2;
	REQUIRE(cut > 0);
	const char *p = write_copy("cut", b, cut);
	CHECK_ERR(mpk__scan_file(p, &cb), EBADMSG);
	unlink(p);

	/* DT_TEXTREL: DT_DEBUG's slot (an executable has one) renamed */
	char *c = malloc(size);
	REQUIRE(c);
	memcpy(c, b, size);
	Elf64_Dyn *d = dyn_entry(c, DT_DEBUG);
	REQUIRE(d);
	d->d_tag = DT_TEXTREL;
	p = write_copy("textrel", c, size);
	CHECK_ERR(mpk__scan_file(p, &cb), ENOTSUP);
	unlink(p);

	/* DF_TEXTREL in DT_FLAGS (or DT_DEBUG's slot made DT_FLAGS) */
	memcpy(c, b, size);
	d = dyn_entry(c, DT_FLAGS);
	if (!d) {
		d = dyn_entry(c, DT_DEBUG);
		d->d_tag = DT_FLAGS;
		d->d_un.d_val = 0;
	}
	d->d_un.d_val |= DF_TEXTREL;
	p = write_copy("dftextrel", c, size);
	CHECK_ERR(mpk__scan_file(p, &cb), ENOTSUP);
	unlink(p);
	free(c);
	free(b);
}

static void forged(void)
{
	struct seen s = { .want = (uintptr_t)forged_site_fn + 8 };
	struct mpk_scan_cb cb = { on_gadget, NULL, &s };

	REQUIRE(mpk__scan_pid(0, &cb) >= 0);
	CHECK(s.found && !s.g.mpkit && s.g.cls == MPK_SITE_GADGET);
	CHECK(s.mpkit >= 5); /* mpkit's own sites still are */
	printf("forged site: %s, %d mpkit sites\n", s.found ? mpk__site_class_name(s.g.cls) : "not found",
	       s.mpkit);
}

/* Two pages at p: the first anonymous, the second a file, both r-x, so
 * that /proc/self/maps lists them apart. */
static void adjacent(const unsigned char *tail, size_t tlen, const unsigned char *head, size_t hlen,
		     const char *what)
{
	long pg = sysconf(_SC_PAGESIZE);
	unsigned char *p = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(p != MAP_FAILED);
	memset(p, 0xcc, (size_t)pg);
	memcpy(p + pg - tlen, tail, tlen);
	char path[256];
	snprintf(path, sizeof(path), "%s/t_scan_file.%d.page", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
		 (int)getpid());
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	REQUIRE(fd >= 0 && ftruncate(fd, pg) == 0);
	unsigned char *page = calloc(1, (size_t)pg);
	memset(page, 0xcc, (size_t)pg);
	memcpy(page, head, hlen);
	REQUIRE(pwrite(fd, page, (size_t)pg, 0) == pg);
	free(page);
	REQUIRE(mmap(p + pg, (size_t)pg, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, fd, 0) == p + pg);
	close(fd);
	unlink(path);
	REQUIRE(mprotect(p, (size_t)pg, PROT_READ | PROT_EXEC) == 0);

	struct seen s = { 0 };
	/* the site: the WRPKRU's first byte */
	for (size_t k = 0; k + 3 <= tlen + hlen; k++) {
		unsigned char b3[3];
		for (int j = 0; j < 3; j++)
			b3[j] = k + (size_t)j < tlen ? tail[k + (size_t)j] : head[k + (size_t)j - tlen];
		if (b3[0] == 0x0f && b3[1] == 0x01 && b3[2] == 0xef)
			s.want = (uintptr_t)p + (uintptr_t)pg - tlen + k;
	}
	struct mpk_scan_cb cb = { on_gadget, NULL, &s };
	REQUIRE(mpk__scan_pid(0, &cb) >= 0);
	if (!s.found)
		t_fail("%s: no site found", what);
	else if (s.g.cls != MPK_SITE_GADGET)
		t_fail("%s: class %s, want gadget", what, mpk__site_class_name(s.g.cls));
	printf("%s: %s\n", what, s.found ? mpk__site_class_name(s.g.cls) : "not found");
	munmap(p, 2 * (size_t)pg);
}

int main(void)
{
	static const unsigned char set[] = { 0x31, 0xc0, 0x31, 0xc9, 0x31, 0xd2 };
	static const unsigned char set_half[] = { 0x31, 0xc0, 0x31, 0xc9, 0x31, 0xd2, 0x0f, 0x01 };
	static const unsigned char wr_half[] = { 0xef, 0xc3 }, wr[] = { 0x0f, 0x01, 0xef, 0xc3 };

	file_errors();
	forged();
	adjacent(set_half, sizeof(set_half), wr_half, sizeof(wr_half), "split WRPKRU");
	adjacent(set, sizeof(set), wr, sizeof(wr), "setter before, WRPKRU after");
	return t_done();
}
