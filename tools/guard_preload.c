/* SPDX-License-Identifier: MIT */
/*
 * libmpkit-guard.so, the LD_PRELOAD helper of `mpkit guard --lib NAME...
 * -- PROG ARGS` (docs/guard.md): before PROG's main(), each library NAME's
 * writable data past RELRO goes into a domain of its own that every
 * thread may read (MPKIT_GUARD_DENY=all: not even that), and each of its
 * exported functions is sent through the gate (guard_gate.c), which opens
 * that library's domain to the calling thread while it runs.  A write
 * from outside then faults, and mpkit's report names the domain
 * "guard:FILE", after a line naming what was written (guard_report.c).
 *
 *   MPKIT_GUARD_LIB=NAME[:NAME...]  the libraries (8 at most): each its
 *                           file name, or that name up to a dot (libfoo
 *                           for libfoo.so.1), then its own words
 *                           (guard_opts.h: ,deny=all,heap,out=GLOB...)
 *   MPKIT_GUARD_DENY=write|all
 *   MPKIT_GUARD_VERBOSE=1   say what was guarded, and name each export
 *                           left ungated and why
 *   MPKIT_GUARD_REPORT=1    report each write from outside and let it
 *                           through; the list at exit (guard_report.c)
 *   MPKIT_GUARD_STATS=FILE  a line appended at exit: the calls through
 *                           the gate (guard_stats.c)
 *   MPKIT_GUARD_HEAP=1      the blocks the library allocates go in the
 *                           domain too (guard_heap.c)
 *   MPKIT_GUARD_PID=PID     set by mpkit guard: in that process (PROG) a
 *                           library that cannot be guarded ends it with
 *                           125; other processes (PROG's children, which
 *                           inherit the environment) are guarded where
 *                           they load NAME at startup, else run unguarded
 *
 * A library is guarded at startup, or when PROG's dlopen() brings it;
 * threads and longjmp are guard_wrap.c's; what docs/guard.md lists as
 * later is not here (the fault fallback for the library's own ungated
 * code but its destructors, unwinding).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guard.h"
#include "guard_opts.h"

#define GUARD_FAILED 125 /* tools/mpkit.c */

struct guard_lib guard_libs[GUARD_LIBS];
int guard_nlibs;

static pid_t prog; /* PROG's pid (MPKIT_GUARD_PID): failing to guard ends it */

/* Asked each time: a child that fork() made inherits the variable. */
static int must(void)
{
	return prog && getpid() == prog;
}
static int verbose; /* MPKIT_GUARD_VERBOSE: say what was guarded, and not */
/* The libraries' options where their entries say nothing: MPKIT_GUARD_DENY=all,
 * MPKIT_GUARD_HEAP=1, MPKIT_GUARD_REPORT (writes from outside reported, let
 * through). */
static int deny_all, heap_all, report;
static int api; /* in mpk_guard_library(): its errno says why not, and PROG goes on */

static void guard_fail(const char *what, const char *why)
{
	if (api)
		return;
	fprintf(stderr, "mpkit guard: %s: %s\n", what, why);
	if (must())
		_exit(GUARD_FAILED);
}

/* NAME is the file's name, or its name up to a dot. */
static int name_matches(const char *path, const char *want)
{
	const char *b = strrchr(path, '/');
	size_t n = strlen(want);

	b = b ? b + 1 : path;
	return !strncmp(b, want, n) && (b[n] == 0 || b[n] == '.');
}

/* The object's path, absolute.  A library found through a relative
 * search path (LD_LIBRARY_PATH=.) has a relative name, relative to the
 * directory the loader ran in: still the current one at startup, and in
 * the dlopen() wrapper right after the load.  Symbolic links are kept
 * (the domain is named after the name the loader used).  0: too long. */
static int abs_path(const char *name, char *out, size_t size)
{
	char cwd[4096];

	if (name[0] == '/')
		return (size_t)snprintf(out, size, "%s", name) < size;
	if (!getcwd(cwd, sizeof(cwd)))
		return 0;
	while (name[0] == '.' && name[1] == '/')
		name += 2;
	return (size_t)snprintf(out, size, "%s/%s", cwd, name) < size;
}

static int find_lib(struct dl_phdr_info *o, size_t size, void *arg)
{
	struct guard_lib *l = arg;
	uintptr_t relro = 0;

	(void)size;
	/* A name without a slash is no file the loader opened: the program
	 * itself ("") or the vDSO. */
	if (!o->dlpi_name || !strchr(o->dlpi_name, '/') || !name_matches(o->dlpi_name, l->want) ||
	    !abs_path(o->dlpi_name, l->path, sizeof(l->path)))
		return 0;
	l->text_lo = UINTPTR_MAX;
	for (int k = 0; k < o->dlpi_phnum; k++) {
		const ElfW(Phdr) *p = &o->dlpi_phdr[k];
		uintptr_t lo = o->dlpi_addr + p->p_vaddr, hi = lo + p->p_memsz;
		if (p->p_type == PT_GNU_RELRO)
			relro = hi;
		if (p->p_type != PT_LOAD)
			continue;
		if (p->p_flags & PF_W)
			l->data_lo = lo, l->data_hi = hi;
		if (p->p_flags & PF_X) {
			l->text_lo = lo < l->text_lo ? lo : l->text_lo;
			l->text_hi = hi > l->text_hi ? hi : l->text_hi;
		}
	}
	/* RELRO stays read-only, outside the domain (ld aligns its end). */
	if (relro > l->data_lo)
		l->data_lo = relro;
	l->data_lo = (l->data_lo + 4095) & ~(uintptr_t)4095;
#ifdef __GLIBC__
	l->tail_lo = l->tail_hi = (l->data_hi + 4095) & ~(uintptr_t)4095;
#else
	/* musl's loader hands the rest of the segment's last page (past
	 * .bss) to its malloc, which keeps the loader's list of objects and
	 * the first thread's TLS there, written from outside the library: the
	 * last page stays out, and with it the library's data on it. */
	l->tail_lo = l->data_hi & ~(uintptr_t)4095;
	l->tail_hi = l->data_hi;
	if (l->tail_lo < l->data_lo)
		l->tail_lo = l->data_lo;
#endif
	l->data_hi = l->tail_lo > l->data_lo ? l->tail_lo : l->data_lo;
	l->base = o->dlpi_addr;
	return 1;
}

/* mpk_adopt() takes private anonymous memory: an anonymous copy moved
 * over the library's data in one mremap(), so no thread sees it gone. */
static int adopt_data(struct guard_lib *l)
{
	size_t len = l->data_hi - l->data_lo;
	void *copy = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (copy == MAP_FAILED)
		return -1;
	memcpy(copy, (void *)l->data_lo, len);
	if (mremap(copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)l->data_lo) == MAP_FAILED) {
		munmap(copy, len);
		return -1;
	}
	return mpk_adopt(l->domain, (void *)l->data_lo, len);
}

const uint8_t *guard_map_elf(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;

	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	const uint8_t *f = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (f == MAP_FAILED)
		return NULL;
	const ElfW(Ehdr) *eh = (const void *)f;
	if ((size_t)st.st_size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_shoff + (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) > (size_t)st.st_size) {
		munmap((void *)f, (size_t)st.st_size);
		errno = ENOEXEC;
		return NULL;
	}
	*len = (size_t)st.st_size;
	return f;
}

/* A RELRO page made writable (pg, or none: 0) read-only again. */
static int relro_close(struct guard_lib *l, uintptr_t pg)
{
	if (!pg || !mprotect((void *)pg, 4096, PROT_READ))
		return 0;
	guard_fail(l->want, "its RELRO cannot be made read-only again");
	return -1;
}

/* The library's own PLT calls of its gated exports straight to the
 * functions' code (their trampolines), past the gate: such a call comes
 * from inside, where the domain is open already, and the gate's work on
 * re-entry changes nothing (docs/guard.md, "The gate").  Only its
 * R_X86_64_JUMP_SLOT slots: a GLOB_DAT slot holds an address the library
 * may hand out, and other objects' slots are calls from outside.  A slot
 * bound elsewhere (PROG interposes the name) is left alone; a lazy one
 * not bound yet (it still holds its PLT entry, in the library's text) is
 * taken when the name would bind to the library's own export.  Under
 * -z now the slots are in RELRO: made writable for the write, a page at
 * a time.  The slots sent past, counted in *past. */
static void plt_past_gate(struct guard_lib *l, const uint8_t *f, const ElfW(Sym) *sym, const char *str,
			  size_t nsym, const struct guard_fn **gated, int *past)
{
	const ElfW(Ehdr) *eh = (const void *)f;
	const ElfW(Shdr) *sh = (const void *)(f + eh->e_shoff);
	const ElfW(Phdr) *ph = (const void *)(f + eh->e_phoff);
	uintptr_t jmprel = 0, relro_lo = 0, relro_hi = 0;
	size_t pltsz = 0;
	long pltrel = DT_RELA;

	for (int k = 0; k < eh->e_shnum; k++) {
		if (sh[k].sh_type != SHT_DYNAMIC)
			continue;
		const ElfW(Dyn) *d = (const void *)(f + sh[k].sh_offset);
		for (size_t i = 0; i < sh[k].sh_size / sizeof(*d) && d[i].d_tag != DT_NULL; i++)
			if (d[i].d_tag == DT_JMPREL)
				jmprel = d[i].d_un.d_ptr;
			else if (d[i].d_tag == DT_PLTRELSZ)
				pltsz = d[i].d_un.d_val;
			else if (d[i].d_tag == DT_PLTREL)
				pltrel = (long)d[i].d_un.d_val;
	}
	for (int k = 0; k < eh->e_phnum; k++)
		if (ph[k].p_type == PT_GNU_RELRO) {
			relro_lo = (l->base + ph[k].p_vaddr) & ~(uintptr_t)4095;
			/* the loader leaves a last page RELRO shares writable */
			relro_hi = (l->base + ph[k].p_vaddr + ph[k].p_memsz) & ~(uintptr_t)4095;
		}
	if (!jmprel || pltrel != DT_RELA)
		return;
	/* the relocations as mapped: a read-only segment of the library */
	const ElfW(Rela) *r = (const void *)(l->base + jmprel);
	uintptr_t open_pg = 0; /* the RELRO page made writable: slots come in order */
	for (size_t i = 0; i < pltsz / sizeof(*r); i++) {
		size_t s = ELF64_R_SYM(r[i].r_info);
		if (ELF64_R_TYPE(r[i].r_info) != R_X86_64_JUMP_SLOT || s >= nsym || !gated[s])
			continue;
		uintptr_t own = l->base + sym[s].st_value, *slot = (uintptr_t *)(l->base + r[i].r_offset);
		uintptr_t now = __atomic_load_n(slot, __ATOMIC_RELAXED);
		if (now != own && (now < l->text_lo || now >= l->text_hi ||
				   (uintptr_t)dlsym(RTLD_DEFAULT, str + sym[s].st_name) != own))
			continue;
		uintptr_t pg = (uintptr_t)slot & ~(uintptr_t)4095;
		if ((uintptr_t)slot >= relro_lo && (uintptr_t)slot < relro_hi && pg != open_pg) {
			if (relro_close(l, open_pg) || mprotect((void *)pg, 4096, PROT_READ | PROT_WRITE))
				break;
			open_pg = pg;
		}
		__atomic_store_n(slot, (uintptr_t)gated[s]->rest, __ATOMIC_RELAXED);
		++*past;
	}
	relro_close(l, open_pg);
}

/* What the library's out= and keep= words matched (hits: each one's
 * exports left ungated, gated).  A word that changes nothing is said
 * whatever MPKIT_GUARD_VERBOSE (a misspelt name would leave blocks
 * where the user meant them not to be); what each matched, verbose. */
static void say_rules(const struct guard_lib *l, int hits[][2])
{
	for (int r = 0; r < l->nrules; r++) {
		const char *w = l->rules[r].out ? "out" : "keep";
		if (!l->use_heap)
			fprintf(stderr, "mpkit guard: %s: %s=%s changes nothing: its heap blocks are not guarded (no heap)\n",
				l->path, w, l->rules[r].glob);
		else if (!hits[r][1])
			fprintf(stderr, "mpkit guard: %s: %s=%s changes nothing: it matches %s\n", l->path, w,
				l->rules[r].glob, hits[r][0] ? "only exports left ungated" : "none of its exports");
		else if (verbose)
			fprintf(stderr, "mpkit guard: %s: %s=%s matches %d export%s: the blocks allocated under %s are the %s\n",
				l->path, w, l->rules[r].glob, hits[r][1], hits[r][1] > 1 ? "s" : "",
				hits[r][1] > 1 ? "them" : "it", l->rules[r].out ? "caller's" : "library's");
	}
}

/* Every function the library defines in its .dynsym, from its file, to
 * a gate that opens the library's domain; then its own PLT calls of
 * them past it (plt_past_gate()). */
static int patch_exports(struct guard_lib *l, int *patched, int *refused, int *past)
{
	size_t flen;
	const uint8_t *f = guard_map_elf(l->path, &flen);

	if (!f)
		return -1;
	const ElfW(Ehdr) *eh = (const void *)f;
	const ElfW(Shdr) *sh = (const void *)(f + eh->e_shoff);
	int rc = -1;
	const ElfW(Sym) *dsym = NULL;
	const char *dstr = NULL;
	size_t dn = 0;
	const struct guard_fn **gated = NULL;
	int hits[GUARD_RULES][2] = { { 0 } }; /* each rule's exports left ungated, gated */
	if (guard_patch_begin(l->text_lo, l->text_hi))
		goto out;
	for (int k = 0; k < eh->e_shnum; k++) {
		if (sh[k].sh_type != SHT_DYNSYM || sh[k].sh_link >= eh->e_shnum)
			continue;
		const ElfW(Sym) *sym = (const void *)(f + sh[k].sh_offset);
		const char *str = (const char *)f + sh[sh[k].sh_link].sh_offset;
		size_t nsym = sh[k].sh_size / sizeof(*sym);
		free(gated);
		gated = calloc(nsym, sizeof(*gated));
		dsym = sym, dstr = str, dn = gated ? nsym : 0;
		for (size_t s = 0; s < nsym; s++) {
			if (ELF64_ST_TYPE(sym[s].st_info) != STT_FUNC || sym[s].st_shndx == SHN_UNDEF)
				continue;
			uintptr_t at = l->base + sym[s].st_value;
			if (at < l->text_lo || at + sym[s].st_size > l->text_hi)
				continue;
			const char *why, *name = strdup(str + sym[s].st_name);
			int r = name ? guard_rules_match(l->rules, l->nrules, name) : -1;
			int out = r >= 0 ? l->rules[r].out : name && guard_hands_out(name);
			const struct guard_fn *g = name ? guard_patch(l, name, out, (uint8_t *)at, sym[s].st_size, &why) : NULL;
			if (r >= 0)
				hits[r][!!g]++;
			if (g) {
				if (gated)
					gated[s] = g;
				++*patched;
				continue;
			}
			++*refused;
			if (verbose) /* PROG's stderr stays its own otherwise */
				fprintf(stderr, "mpkit guard: %s not gated: %s\n", name ? name : "?",
					name ? why : "out of memory");
			free((void *)name);
		}
	}
	rc = guard_patch_end();
	if (!rc && dn)
		plt_past_gate(l, f, dsym, dstr, dn, gated, past);
	if (!rc)
		say_rules(l, hits);
out:
	free(gated);
	munmap((void *)f, flen);
	return rc;
}

/* At exit, the libraries' destructors run through no gate.  glibc runs
 * them after this helper's destructor (docs/guard.md, experiment 4) for
 * a library loaded at startup, before it for one opened later; musl
 * before it, after every atexit() handler.  This handler, registered
 * when each library is guarded, runs before the library's destructors in
 * each case, and after the program's handlers registered later. */
static void guard_open_at_exit(void)
{
	for (int i = 0; i < guard_nlibs; i++)
		if (guard_libs[i].domain && mpk_set_all(guard_libs[i].domain, MPK_RW))
			continue;
}

static int waiting;   /* libraries not loaded yet: guarded when dlopen() brings them */
static int reporting; /* some library's accesses are listed at exit */
static pthread_mutex_t late = PTHREAD_MUTEX_INITIALIZER;

struct guard_lib *guard_lib_of(const mpk_domain *d)
{
	int n = __atomic_load_n(&guard_nlibs, __ATOMIC_ACQUIRE);

	for (int i = 0; d && i < n; i++)
		if (__atomic_load_n(&guard_libs[i].domain, __ATOMIC_ACQUIRE) == d)
			return &guard_libs[i];
	return NULL;
}

struct guard_lib *guard_lib_at(uintptr_t pc)

{
	int n = __atomic_load_n(&guard_nlibs, __ATOMIC_ACQUIRE);

	for (int i = 0; i < n; i++) {
		struct guard_lib *l = &guard_libs[i];
		if (__atomic_load_n(&l->domain, __ATOMIC_ACQUIRE) && pc >= l->text_lo && pc < l->text_hi)
			return l;
	}
	return NULL;
}

/* l found loaded: its data into its own domain, its exports gated.  0,
 * or -1 with errno (said by guard_fail()). */
static int guard_lib(struct guard_lib *l)
{
	char dname[64];
	int patched = 0, refused = 0, past = 0, heap = 0;

	for (int i = 0; i < guard_nlibs; i++)
		if (&guard_libs[i] != l && guard_libs[i].domain && guard_libs[i].base == l->base) {
			errno = EEXIST;
			guard_fail(l->want, "named twice (the same library as another --lib)");
			return -1;
		}
	if (l->data_hi <= l->data_lo) {
		errno = ENOTSUP;
		guard_fail(l->want, l->tail_hi > l->tail_lo
					    ? "its data past RELRO all shares its last page with the C library's malloc"
					    : "it has no writable data past RELRO");
		return -1;
	}
	l->file = strrchr(l->path, '/') + 1;
	snprintf(dname, sizeof(dname), "guard:%.56s", l->file);
	mpk_domain *d = mpk_domain_create(dname, MPK_RW, MPK_DOMAIN_SHARED);
	if (!d) {
		guard_fail(l->want, strerror(errno));
		return -1;
	}
	/* Set before the gates exist: their descriptors lead here. */
	__atomic_store_n(&l->domain, d, __ATOMIC_RELEASE);
	if (adopt_data(l) || (heap = guard_heap_start(l)) < 0 || patch_exports(l, &patched, &refused, &past)) {
		guard_fail(l->want, strerror(errno));
		return -1;
	}
	if (guard_report_start(l)) {
		guard_fail(l->want, strerror(errno));
		return -1;
	}
	if (mpk_set_all(d, l->outside)) {
		guard_fail(l->want, strerror(errno));
		return -1;
	}
	if (atexit(guard_open_at_exit)) {
		errno = ENOMEM;
		guard_fail(l->want, "atexit() failed");
		return -1;

	}
	reporting |= l->report;
	if (verbose) {
		fprintf(stderr, "mpkit guard: %s: %zu bytes of data in domain %s, %d functions gated, %d not\n",
			l->path, (size_t)(l->data_hi - l->data_lo), dname, patched, refused);
		fprintf(stderr, "mpkit guard: %s: %d of its own PLT calls of them past the gate\n", l->path, past);
		if (l->outside == MPK_NONE)
			fprintf(stderr, "mpkit guard: %s: its data cannot be read from outside either\n", l->path);
		if (heap)
			fprintf(stderr, "mpkit guard: %s: the blocks it allocates inside go in domain %s too\n", l->path,
				dname);
		if (l->tail_hi > l->tail_lo)
			fprintf(stderr, "mpkit guard: %s: its last %zu bytes of data (+0x%zx) not covered: their page is "
					"shared with the C library's malloc\n", l->path, (size_t)(l->tail_hi - l->tail_lo),
				(size_t)(l->tail_lo - l->base));
	}
	return 0;
}

/* PROG ended and never loaded a library of the list: it ran unguarded. */
static void guard_never_loaded(void)
{
	if (!must() || !__atomic_load_n(&waiting, __ATOMIC_ACQUIRE))
		return;
	int some = 0;
	fflush(NULL);
	for (int i = 0; i < guard_nlibs; i++)
		some |= guard_libs[i].found;
	for (int i = 0; i < guard_nlibs; i++)
		if (!guard_libs[i].found)
			guard_fail(guard_libs[i].want,
				   some ? "no such library loaded, at startup or with dlopen: it was not guarded"
					: "no such library loaded, at startup or with dlopen: nothing was guarded");
}

/* PROG's dlopen(): when it brings a library of the list, the library is
 * guarded before PROG can reach it, and kept loaded (its data stays the
 * domain's).  glibc resolves a bare name against the caller's RUNPATH:
 * the caller is now this helper, which has none. */
__attribute__((visibility("default"))) void *dlopen(const char *file, int mode)
{
	static void *(*real)(const char *, int);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "dlopen");
	void *h = real ? real(file, mode) : NULL;
	/* RTLD_NOLOAD brings nothing (and mpkit_guard_api() calls it holding late). */
	if (!h || (mode & RTLD_NOLOAD) || !__atomic_load_n(&waiting, __ATOMIC_ACQUIRE))
		return h;
	pthread_mutex_lock(&late);
	for (int i = 0; i < guard_nlibs; i++) {
		struct guard_lib *l = &guard_libs[i];
		if (l->found || !dl_iterate_phdr(find_lib, l))
			continue;
		l->found = 1;
		__atomic_sub_fetch(&waiting, 1, __ATOMIC_RELEASE);
		guard_lib(l);
		if (l->domain && !real(l->path, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE))
			guard_fail(l->want, "could not be kept loaded (RTLD_NODELETE)");
	}
	pthread_mutex_unlock(&late);
	return h;
}

/* One library to guard, by name (its file name, or that up to a dot):
 * guarded now if it is loaded, else when PROG's dlopen() brings it.
 * Its options: its entry's, else the process's. */
static void guard_library(const char *want, const struct guard_opts *o)
{
	if (guard_nlibs == GUARD_LIBS) {
		guard_fail(want, "too many libraries (8 at most)");
		return;
	}
	struct guard_lib *l = &guard_libs[guard_nlibs];
	l->want = want;
	l->index = guard_nlibs;
	l->outside = (o->deny_all < 0 ? deny_all : o->deny_all) ? MPK_NONE : MPK_READ;
	l->use_heap = o->heap < 0 ? heap_all : o->heap;
	l->nrules = o->nrules;
	memcpy(l->rules, o->rule, sizeof(l->rules));
	l->report = report;
	__atomic_store_n(&guard_nlibs, guard_nlibs + 1, __ATOMIC_RELEASE);
	if (dl_iterate_phdr(find_lib, l)) {
		l->found = 1;
		guard_lib(l);
		return;
	}
	/* Not there yet: PROG may open it. */
	if (!waiting++ && atexit(guard_never_loaded))
		guard_fail(want, "atexit() failed");
	else if (verbose)
		fprintf(stderr, "mpkit guard: %s: not loaded at startup: guarded if PROG opens it\n", want);
}

__attribute__((constructor)) static void guard_start(void)
{
	const char *pid = getenv("MPKIT_GUARD_PID"), *deny = getenv("MPKIT_GUARD_DENY");
	const char *list = getenv("MPKIT_GUARD_LIB");
	char *names, *save = NULL;

	prog = pid ? (pid_t)atol(pid) : 0;
	verbose = getenv("MPKIT_GUARD_VERBOSE") != NULL;
	report = getenv("MPKIT_GUARD_REPORT") != NULL;
	deny_all = deny && !strcmp(deny, "all");
	heap_all = getenv("MPKIT_GUARD_HEAP") && !strcmp(getenv("MPKIT_GUARD_HEAP"), "1");
	guard_stats_start();
	if (!list || !*list) {
		/* Opened by mpk_guard_library(), which says what to guard. */
		if (prog)
			guard_fail("MPKIT_GUARD_LIB", "not set: no library to guard");
		return;
	}
	if (!(names = strdup(list))) {
		guard_fail("MPKIT_GUARD_LIB", strerror(errno));

		return;
	}
	/* NAME[,OPTION...]:NAME...: a library's file name has no colon (ld.so's
	 * lists use it too), nor a comma. */
	for (char *n = strtok_r(names, ":", &save); n; n = strtok_r(NULL, ":", &save)) {
		struct guard_opts o;
		const char *bad = guard_opts_parse(n, &o);
		if (bad) {
			char why[160];
			if (o.why)
				snprintf(why, sizeof(why), "bad option '%.40s' (%s)", bad, o.why);
			else
				snprintf(why, sizeof(why), "unknown option '%.40s' (it takes %s)", bad, GUARD_OPTS_WORDS);
			guard_fail(n, why);
			continue;
		}
		guard_library(n, &o);
	}
	if (!guard_nlibs)
		guard_fail("MPKIT_GUARD_LIB", "empty: no library to guard");
}

/* mpk_guard_library() (src/features/guard.c), this helper opened by
 * dlopen() or preloaded: what guard_library() does for a library already
 * loaded, its options from the flags; each call another library, in the
 * next place of guard_libs[] (after mpkit guard's own).  Nothing is
 * changed on EEXIST (guarded already), EBUSY (named by mpkit guard's
 * --lib, guarded when PROG's dlopen() brings it), ENOENT (not loaded),
 * ENOSPC (GUARD_LIBS guarded) or ENOTSUP (no data of its own to guard);
 * nor when guarding fails before its domain is made (its place is given
 * back).  Past that a failure leaves it half guarded, in its place. */
__attribute__((visibility("default"))) int mpkit_guard_api(const char *name, unsigned flags)
{
	struct guard_lib *want = calloc(1, sizeof(*want));
	int rc = -1;

	if (!want)
		return -1;
	want->want = name;
	pthread_mutex_lock(&late);
	int found = dl_iterate_phdr(find_lib, want);
	errno = 0;
	for (int i = 0; i < guard_nlibs && found && !errno; i++) {
		const struct guard_lib *g = &guard_libs[i];
		if (g->domain && g->base == want->base)
			errno = EEXIST;
		else if (!g->found && name_matches(want->path, g->want))
			errno = EBUSY;
	}
	if (errno)
		;
	else if (!found)
		errno = ENOENT;
	else if (guard_nlibs == GUARD_LIBS)
		errno = ENOSPC;
	else if (want->data_hi <= want->data_lo)
		errno = ENOTSUP;
	else if (!(want->want = strdup(name)))
		errno = ENOMEM;
	else if (!dlopen(want->path, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE)) {
		/* Kept loaded, as the dlopen() wrapper keeps a library it guards. */
		free((void *)want->want);
		errno = ENOENT;
	} else {
		struct guard_lib *l = &guard_libs[guard_nlibs];
		*l = *want;
		l->index = guard_nlibs;
		l->found = 1;
		l->outside = flags & MPK_GUARD_DENY_ALL ? MPK_NONE : MPK_READ;
		l->report = (flags & MPK_GUARD_REPORT) != 0;
		l->use_heap = 0; /* no malloc of the program's reaches a helper opened late */
		__atomic_store_n(&guard_nlibs, guard_nlibs + 1, __ATOMIC_RELEASE);
		api = 1;
		rc = guard_lib(l);
		api = 0;
		if (rc && !__atomic_load_n(&l->domain, __ATOMIC_ACQUIRE)) {
			int e = errno;
			__atomic_store_n(&guard_nlibs, l->index, __ATOMIC_RELEASE);
			free((void *)l->want);
			memset(l, 0, sizeof(*l));
			errno = e;
		}
	}
	int e = errno;
	pthread_mutex_unlock(&late);
	free(want);
	errno = e;
	return rc;
}

/* The list of --report's writes (the domain is open by now); the
 * counts MPKIT_GUARD_STATS asks for. */
__attribute__((destructor)) static void guard_end(void)
{
	if (reporting)
		guard_report_end();
	guard_stats_end();
	guard_open_at_exit();
}
