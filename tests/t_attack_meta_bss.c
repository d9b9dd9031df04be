/*
 * Attack: the heap metadata area's own state rewritten where it lives, in
 * libmpkit's .bss, outside the seal.  The attacker reads the library's
 * symbol table (here the test's own, which links libmpkit.a) for the
 * object `meta` (src/heap/meta.c), finds in it the bump pointer and its
 * end (the last pair of words naming the heap-meta domain's memory, after
 * the table of ranges) and the free lists before them (the layout read
 * from the source), and points them all at a global buffer.  The next
 * heap descriptor (and chunk descriptor) came from there: the attacker's
 * memory, where every later choice of the allocator is theirs.  Sealed,
 * the area now checks each run against the core's record of the
 * heap-meta domain and refuses the global: mpk_heap_create() fails with
 * ENOMEM, mallocs that need a new chunk too, and the buffer is neither
 * read as a link nor written.  Open (the soft default) nothing is sealed:
 * not tested.  Both backends.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "t_attack.h"

enum { ORDERS = 11, BUF = 1 << 20 };

static unsigned char buf[BUF] __attribute__((aligned(4096)));
static unsigned char want[BUF];

int main(void);

/* The address of every object symbol named name, as an attacker reads
 * them from the executable (PIE: placed by main's). */
static int symbols(const char *name, uintptr_t *at, size_t *size, int max)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), n = 0;
	struct stat st;

	REQUIRE(fd >= 0 && fstat(fd, &st) == 0);
	unsigned char *f = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	REQUIRE(f != MAP_FAILED);
	close(fd);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(f + eh->e_shoff);
	uintptr_t main_at = 0, main_val = 0;
	for (int pass = 0; pass < 2; pass++)
		for (unsigned i = 0; i < eh->e_shnum; i++) {
			if (sh[i].sh_type != SHT_SYMTAB)
				continue;
			const Elf64_Sym *sym = (const Elf64_Sym *)(f + sh[i].sh_offset);
			const char *str = (const char *)(f + sh[sh[i].sh_link].sh_offset);
			for (size_t k = 0; k < sh[i].sh_size / sizeof(*sym); k++) {
				const char *s = str + sym[k].st_name;
				if (!pass && !strcmp(s, "main") && ELF64_ST_TYPE(sym[k].st_info) == STT_FUNC) {
					main_val = sym[k].st_value;
					main_at = (uintptr_t)main;
				} else if (pass && !strcmp(s, name) && n < max &&
					   ELF64_ST_TYPE(sym[k].st_info) == STT_OBJECT) {
					at[n] = main_at - main_val + sym[k].st_value;
					size[n++] = sym[k].st_size;
				}
			}
		}
	munmap(f, (size_t)st.st_size);
	if (!main_at)
		t_skip("no symbol table (a stripped test)");
	return n;
}

/* The bump pointer in the object at a of len bytes: the last pair of
 * words where the first names m's memory and the second is past it. */
static uintptr_t *find_bump(uintptr_t a, size_t len, mpk_domain *m)
{
	uintptr_t *w = (uintptr_t *)a, *found = NULL;

	for (size_t i = 0; i + 1 < len / sizeof(*w); i++)
		if (mpk_domain_of((void *)w[i]) == m && w[i + 1] > w[i] &&
		    mpk_domain_of((void *)(w[i + 1] - 1)) == m)
			found = &w[i];
	return found;
}

static void attack(void)
{
	uintptr_t at[8];
	size_t size[8];
	t_setenv("MPKIT_HEAP_META", "closed");
	mpk_domain *d = mpk_domain_create("attack-bss", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	mpk_domain *m = mpk_domain_of(h);
	REQUIRE(m && !strcmp(mpk_domain_name(m), "heap-meta"));

	int n = symbols("meta", at, size, 8);
	uintptr_t *bump = NULL;
	for (int i = 0; i < n && !bump; i++)
		bump = find_bump(at[i], size[i], m);
	if (!bump)
		t_fail("no bump pointer found in the %d objects named meta", n);
	REQUIRE(bump);
	uintptr_t *lists = bump - ORDERS;
	uintptr_t saved[ORDERS + 2];
	memcpy(saved, lists, sizeof(saved));

	/* The free lists' heads and the bump into the buffer; each head
	 * a run whose link is NULL. */
	memset(buf, 0x5a, sizeof(buf));
	for (int o = 0; o < ORDERS; o++) {
		unsigned char *run = buf + (o < 8 ? (size_t)o << 16 : 0);
		memset(run, 0, 8);
		lists[o] = (uintptr_t)run;
	}
	bump[0] = (uintptr_t)buf + (BUF / 2);
	bump[1] = (uintptr_t)buf + BUF;
	memcpy(want, buf, sizeof(buf));

	errno = 0;
	mpk_heap *h2 = mpk_heap_create(d, 0);
	if (h2 && (unsigned char *)h2 >= buf && (unsigned char *)h2 < buf + BUF)
		t_fail("the new heap's descriptor %p is in the attacker's buffer", (void *)h2);
	CHECK(h2 == NULL && errno == ENOMEM);
	/* Blocks that need chunks of their own: each fails or is the heap's. */
	void *blk[12];
	for (int i = 0; i < 12; i++) {
		blk[i] = mpk_heap_malloc(h, 120 << 10);
		if (blk[i] && mpk_domain_of(blk[i]) != d)
			t_fail("block %p outside the heap's domain", blk[i]);
	}
	if (memcmp(buf, want, sizeof(buf)))
		t_fail("the allocator wrote into the attacker's buffer");

	memcpy(lists, saved, sizeof(saved)); /* the state as it was */
	for (int i = 0; i < 12; i++)
		CHECK(!blk[i] || mpk_heap_free(h, blk[i]) == 0);
	if (h2 && ((unsigned char *)h2 < buf || (unsigned char *)h2 >= buf + BUF))
		CHECK(mpk_heap_destroy(h2) == 0);
	/* the heap goes on */
	t_attack_sweep(h, NULL, 0);
	CHECK(mpk_heap_destroy(h) == 0 && mpk_domain_destroy(d) == 0);
	t_setenv("MPKIT_HEAP_META", NULL);
}

int main(void)
{
	return t_both_backends(attack);
}
