/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* program_invocation_short_name */
#include <elf.h>
#include <link.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "t_attack.h"

int main(void);

enum { SWEEP_MAX = 1024 };

int t_span_by_addr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct t_span *)a)->p;
	uintptr_t y = (uintptr_t)((const struct t_span *)b)->p;
	return x < y ? -1 : x > y;
}

static int overlap(const struct t_span *a, const struct t_span *b)
{
	uintptr_t x = (uintptr_t)a->p, y = (uintptr_t)b->p;
	return x < y + b->len && y < x + a->len;
}

void t_attack_sweep(mpk_heap *h, const struct t_span *keep, int nkeep)
{
	/* each size class kind: small slabs, page runs, big (own region) */
	static const size_t sizes[] = { 1, 8, 24, 48, 64, 100, 200, 500, 1000, 2000, 3000,
					5000, 20000, 70000, 200000 };
	static struct t_span got[SWEEP_MAX];
	mpk_domain *d = mpk_heap_domain(h);
	int n = 0;

	REQUIRE(d);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(*sizes); s++)
		for (int i = 0; i < (sizes[s] > 10000 ? 8 : 64); i++) {
			void *p = mpk_heap_malloc(h, sizes[s]);
			REQUIRE(p && n < SWEEP_MAX);
			got[n].p = p;
			got[n].len = mpk_heap_usable_size(h, p);
			if (got[n].len < sizes[s])
				t_fail("block %p of %zu bytes: usable size %zu", p, sizes[s], got[n].len);
			/* out of the heap: in no domain, or another's */
			if (mpk_domain_of(p) != d || mpk_domain_of((char *)p + got[n].len - 1) != d)
				t_fail("block %p of %zu bytes lies outside the heap's domain", p, sizes[s]);
			for (int k = 0; k < nkeep; k++)
				if (overlap(&got[n], &keep[k]))
					t_fail("block %p+%zu overlaps %p+%zu", p, got[n].len, keep[k].p,
					       keep[k].len);
			n++;
		}
	qsort(got, (size_t)n, sizeof(*got), t_span_by_addr);
	for (int i = 1; i < n; i++)
		if (overlap(&got[i - 1], &got[i]))
			t_fail("blocks %p+%zu and %p+%zu overlap", got[i - 1].p, got[i - 1].len, got[i].p,
			       got[i].len);
	for (int i = 0; i < n; i++)
		CHECK(mpk_heap_free(h, (void *)got[i].p) == 0);
}

/* The child of t_attack_reported(): the default misuse action. */
struct t_attack_call {
	void (*fn)(void *);
	void *arg;
};

static void t_attack_default(void *call)
{
	const struct t_attack_call *k = call;
	REQUIRE(mpk_misuse_handler_set(NULL, NULL) == 0);
	k->fn(k->arg);
}

void t_attack_reported(void (*fn)(void *), void *arg, const char *what, const void *addr,
		       const char *call)
{
	char want[256];
	struct t_attack_call k = { fn, arg };
	struct t_child c = t_child(t_attack_default, &k, T_CHILD_STDERR);

	if (c.signal != SIGABRT)
		t_fail("%s %p: child status %#x, want death by SIGABRT", what, addr, c.status);
	snprintf(want, sizeof(want), "mpkit: heap misuse: %s %p in %s", what, addr, call);
	CHECK_HAS(c.err, want);
	CHECK_HAS(c.err, "mpkit:   backtrace:\n");
	/* the frames reach the caller: this test's binary */
	snprintf(want, sizeof(want), "/%s+0x", program_invocation_short_name);
	CHECK_HAS(c.err, want);
	t_child_free(&c);
}

void t_attack_copy(void *to, const void *from, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((volatile unsigned char *)to)[i] = ((const volatile unsigned char *)from)[i];
}

void t_attack_both_modes(void (*attack)(const char *meta))
{
	t_misuse_catch();
	attack("open");
	attack("closed");
	CHECK(t_misuses == 0);
	t_setenv("MPKIT_HEAP_META", NULL);
}

/* The heap layer's files, and its globals (heap.h). */
static const char *const heap_files[] = { "meta.c",  "seal.c",  "map.c",  "big.c",   "run.c",   "heap.c",
					  "calls.c", "cache.c", "fork.c", "vault.c", "vlist.c", "misuse.c" };
static const char *const heap_globals[] = { "mpk__meta_dom",   "mpk__seal_pg",    "mpk__tag_root",
					    "mpk__tc_lim",     "mpk__fork_gen",
					    "mpk__heaps_lock", "mpk__meta_lock",  "mpk__runs_epoch",
					    "mpk__class_of16", "mpk__classes_pg" };

static bool listed(const char *s, const char *const *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, l[i]))
			return true;
	return false;
}

/* Each symbol of the executable's symbol table, with the file its locals
 * are of (the last FILE symbol's base name); where the executable is
 * placed (PIE: main's address less its value).  Skips the test when it
 * has no symbol table. */
static uintptr_t each_symbol(void (*fn)(const char *s, const Elf64_Sym *sym, const char *file, void *arg),
			     void *arg)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	struct stat st;

	REQUIRE(fd >= 0 && fstat(fd, &st) == 0);
	unsigned char *f = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	REQUIRE(f != MAP_FAILED);
	close(fd);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(f + eh->e_shoff);
	uintptr_t main_val = 0;
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_SYMTAB)
			continue;
		const Elf64_Sym *sym = (const Elf64_Sym *)(f + sh[i].sh_offset);
		const char *str = (const char *)(f + sh[sh[i].sh_link].sh_offset);
		const char *file = "";
		for (size_t k = 0; k < sh[i].sh_size / sizeof(*sym); k++) {
			const char *s = str + sym[k].st_name;
			int type = ELF64_ST_TYPE(sym[k].st_info);
			if (type == STT_FILE) {
				const char *base = strrchr(s, '/');
				file = base ? base + 1 : s;
				continue;
			}
			if (type == STT_FUNC && !strcmp(s, "main"))
				main_val = sym[k].st_value;
			fn(s, &sym[k], file, arg);
		}
	}
	munmap(f, (size_t)st.st_size);
	if (!main_val)
		t_skip("no symbol table (a stripped test)");
	return (uintptr_t)main - main_val;
}

/* A symbol of the heap layer's: a local of its files, or one of heap.h's
 * globals. */
static bool heap_sym(const char *s, const Elf64_Sym *sym, const char *file)
{
	if (ELF64_ST_BIND(sym->st_info) == STB_LOCAL)
		return listed(file, heap_files, sizeof(heap_files) / sizeof(*heap_files));
	return listed(s, heap_globals, sizeof(heap_globals) / sizeof(*heap_globals));
}

struct objs {
	struct t_obj *o;
	int n, max;
};

static void add_object(const char *s, const Elf64_Sym *sym, const char *file, void *arg)
{
	struct objs *a = arg;

	if (ELF64_ST_TYPE(sym->st_info) != STT_OBJECT || !sym->st_size || a->n == a->max)
		return;
	if (heap_sym(s, sym, file))
		a->o[a->n++] = (struct t_obj){ sym->st_value, sym->st_size };
}

/* The heap layer's data objects, as an attacker reads them from the
 * executable's symbol table. */
int t_attack_heap_objects(struct t_obj *o, int max)
{
	struct objs a = { o, 0, max };
	uintptr_t base = each_symbol(add_object, &a);

	for (int i = 0; i < a.n; i++)
		o[i].at += base;
	return a.n;
}

/* The executable's PT_TLS (the first object dl_iterate_phdr() gives). */
static int main_tls(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_TLS)
			*(const ElfW(Phdr) **)arg = &info->dlpi_phdr[i];
	return 1;
}

struct named {
	const char *file, *name; /* file NULL: the heap layer's */
	const Elf64_Sym *sym;
	Elf64_Sym copy;
};

static void find_named(const char *s, const Elf64_Sym *sym, const char *file, void *arg)
{
	struct named *a = arg;
	int type = ELF64_ST_TYPE(sym->st_info);

	if ((type == STT_OBJECT || type == STT_TLS) && !strcmp(s, a->name) &&
	    (a->file ? ELF64_ST_BIND(sym->st_info) == STB_LOCAL && !strcmp(file, a->file) : heap_sym(s, sym, file))) {
		a->copy = *sym; /* the mapping goes */
		a->sym = &a->copy;
	}
}

static bool symbol(const char *file, const char *name, struct t_obj *o)
{
	struct named a = { file, name, NULL, { 0 } };
	uintptr_t base = each_symbol(find_named, &a);

	if (!a.sym)
		return false;
	o->size = a.sym->st_size;
	if (ELF64_ST_TYPE(a.sym->st_info) == STT_OBJECT) {
		o->at = base + a.sym->st_value;
		return true;
	}
	/* x86-64 (TLS variant II): glibc puts the executable's block first
	 * below the thread pointer, at its size rounded up to its alignment
	 * (past the bytes its first one's offset in the alignment asks). */
	const ElfW(Phdr) *tls = NULL;
	dl_iterate_phdr(main_tls, &tls);
	if (!tls)
		return false;
	uintptr_t align = tls->p_align ? tls->p_align : 1;
	uintptr_t first = -(tls->p_vaddr & (align - 1)) & (align - 1);
	uintptr_t off = ((tls->p_memsz - first + align - 1) & ~(align - 1)) + first;
	o->at = (uintptr_t)__builtin_thread_pointer() - off + a.sym->st_value;
	return true;
}

bool t_attack_heap_symbol(const char *name, struct t_obj *o)
{
	return symbol(NULL, name, o);
}

bool t_attack_symbol(const char *file, const char *name, struct t_obj *o)
{
	return symbol(file, name, o);
}

/* The scheme as the source has it (src/heap/heap.h, mpk__hdr_sum()). */
static const uint64_t hdr_c1 = 0x61c88647u;

uint64_t t_attack_hdr_key(const void *p)
{
	uint64_t w[2];

	t_attack_copy(w, (const char *)p - 16, 16);
	return (w[1] - w[0] * hdr_c1) ^ (uintptr_t)p;
}

void t_attack_hdr_forge(void *p, uint64_t size, uint64_t off, uint64_t key)
{
	uint64_t w[2] = { size, (key ^ (uintptr_t)p) + size * hdr_c1 + off };

	t_attack_copy((char *)p - 16, w, 16);
}

/* (an attacker's reads: no sanitizer looks) */
#if defined(__SANITIZE_ADDRESS__)
__attribute__((no_sanitize_address))
#endif
#if defined(__SANITIZE_THREAD__)
__attribute__((no_sanitize_thread))
#endif
void *t_attack_find(uintptr_t w0, size_t off1, uintptr_t w1)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	void *found = NULL;

	REQUIRE(f);
	while (!found && fgets(line, sizeof(line), f)) {
		uintptr_t lo, hi;
		char perms[8];
		/* (not a sanitizer's shadow: terabytes, untouched) */
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || strncmp(perms, "rw-p", 4) ||
		    hi - lo > ((size_t)64 << 20))
			continue;
		for (uintptr_t pg = lo; pg < hi && !found; pg += 4096) {
			if (mpk_domain_of((void *)pg))
				continue; /* closed to a reader on hw: a fault, not a read */
			for (uintptr_t a = pg; a < pg + 4096 && a + off1 + 8 <= hi; a += 8) {
				uintptr_t x = *(volatile uintptr_t *)a;
				if ((w0 ? x == w0 : x != 0) && *(volatile uintptr_t *)(a + off1) == w1 &&
				    *(volatile uint32_t *)(a + 8) - 1 < (1u << 20) &&
				    *(volatile uint64_t *)(a + 16) < (1ull << 32))
					found = (void *)a;
			}
		}
	}
	fclose(f);
	return found;
}
