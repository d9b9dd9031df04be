/* SPDX-License-Identifier: MIT */
/*
 * Faults in a guarded library's domain (docs/guard.md, "Fault
 * reports" and "--report"); the library is the one whose domain it is.  Enforcing, a write from outside (a read
 * under --deny all) stops PROG with mpkit's report, its backtrace from
 * the faulting instruction, and a line ahead of it that says the guard
 * caught it and what was written: the library's symbol and offset, or
 * unnamed static data (a library with no symbol there, a stripped one),
 * or with --heap the heap block and offset (guard_blocks.c's index).
 * With --report, the access is reported and then let through, and the
 * program runs to its end: the first access of each instruction is
 * reported whole (what was written, the thread, the writer's
 * backtrace); the others are counted, and the helper's destructor lists
 * every writing instruction with its count.  The faulting instruction
 * runs with the domain open and the trap flag set, and the SIGTRAP after
 * it closes the domain again, on both backends: the fault callback's
 * mpk_set() acts on the interrupted thread's rights, and the trap
 * handler's mpk_set_interrupted() too (on hw the PKRU image of its signal
 * frame; a handler's own PKRU is thrown away at its return).  On hw the
 * domain is open for that one instruction to the faulting thread alone.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "guard.h"
#include "trace.h"
#include "unwind.h"

#define TRAP_FLAG 0x100

/* The library's data symbols, by address (built before any fault). */
struct dsym {
	uintptr_t at, size;
	const char *name;
};
static struct {
	struct dsym *syms;
	size_t n;
} tab[GUARD_LIBS]; /* by guard_lib.index */

/* One per writing instruction; the first write of each is reported. */
#define SITES 256
static struct site {
	uintptr_t ip;             /* 0: free */
	const struct guard_lib *lib; /* the first write's */
	unsigned long count;
	uintptr_t addr;           /* the first address it wrote */
	struct guard_block blk;   /* what addr was then, if a heap address */
	int write;
} sites[SITES];
static unsigned long lost; /* writes of instructions past SITES */

static struct sigaction mpkit_segv, old_trap;
static GUARD_TLS ucontext_t *fault_uc;
static GUARD_TLS int stepping, step_rights;
static GUARD_TLS mpk_domain *step_dom;

static void put(const char *s)
{
	mpk__fd_puts(STDERR_FILENO, s);
}

static void put_dec(unsigned long v)
{
	char b[24];
	int i = sizeof(b);

	b[--i] = 0;
	do
		b[--i] = (char)('0' + v % 10);
	while ((v /= 10) && i);
	put(b + i);
}

static int by_at(const void *a, const void *b)
{
	const struct dsym *x = a, *y = b;
	return x->at < y->at ? -1 : x->at > y->at;
}

/* The objects of .symtab (if the file has one) and .dynsym. */
static int load_syms(const struct guard_lib *lib)
{
	struct dsym *syms = NULL;
	size_t nsyms = 0;
	size_t flen;
	const uint8_t *f = guard_map_elf(lib->path, &flen);

	if (!f)
		return -1;
	const ElfW(Ehdr) *eh = (const void *)f;
	const ElfW(Shdr) *sh = (const void *)(f + eh->e_shoff);
	for (int pass = 0; pass < 2; pass++) {
		size_t n = 0;
		for (int k = 0; k < eh->e_shnum; k++) {
			if ((sh[k].sh_type != SHT_SYMTAB && sh[k].sh_type != SHT_DYNSYM) || sh[k].sh_link >= eh->e_shnum)
				continue;
			const ElfW(Sym) *sym = (const void *)(f + sh[k].sh_offset);
			const char *str = (const char *)f + sh[sh[k].sh_link].sh_offset;
			for (size_t s = 0; s < sh[k].sh_size / sizeof(*sym); s++) {
				uintptr_t at = lib->base + sym[s].st_value;
				if (ELF64_ST_TYPE(sym[s].st_info) != STT_OBJECT || sym[s].st_shndx == SHN_UNDEF ||
				    at + sym[s].st_size <= lib->data_lo || at >= lib->data_hi)
					continue;
				if (pass && !(syms[n].name = strdup(str + sym[s].st_name)))
					goto out;
				if (pass)
					syms[n].at = at, syms[n].size = sym[s].st_size;
				n++;
			}
		}
		if (!pass && !(syms = calloc(n + 1, sizeof(*syms))))
			goto out;
		nsyms = n;
	}
	qsort(syms, nsyms, sizeof(*syms), by_at);
	tab[lib->index].syms = syms;
	tab[lib->index].n = nsyms;
out:
	munmap((void *)f, flen);
	return syms ? 0 : -1;
}

/* What heap address a is (b: the index's answer, guard_blocks.c): "+0x10
 * in the 24-byte heap block at 0x... of lib", "free heap space of lib,
 * +0x28 from the 24-byte block at 0x... (past its end)", "free heap space
 * of lib", or, the heap changing as it was looked up, "a heap block or
 * free heap space of lib (not looked up: ...)". */
static void heap_where(struct mpk__text *t, const struct guard_lib *lib, uintptr_t a, const struct guard_block *b)
{
	/* "+OFF" rel " SIZE" kind " START" */
	const char *rel = " in the ", *kind = "-byte heap block at ";

	switch (b->kind) {
	case GUARD_BLOCK_PAST:
		rel = " from the ", kind = "-byte block at ";
		/* fallthrough */
	case GUARD_BLOCK_FREE:
		mpk__text_str(t, "free heap space of ");
		mpk__text_str(t, lib->file);
		if (b->kind == GUARD_BLOCK_FREE)
			return;
		mpk__text_str(t, ", ");
		/* fallthrough */
	case GUARD_BLOCK_IN:
		mpk__text_str(t, "+");
		mpk__text_hex(t, a - b->start);
		mpk__text_str(t, rel);
		mpk__text_dec(t, b->size);
		mpk__text_str(t, kind);
		mpk__text_hex(t, b->start);
		mpk__text_str(t, b->kind == GUARD_BLOCK_IN ? " of " : " (past its end)");
		if (b->kind == GUARD_BLOCK_IN)
			mpk__text_str(t, lib->file);
		return;
	default:
		mpk__text_str(t, "a heap block or free heap space of ");
		mpk__text_str(t, lib->file);
		mpk__text_str(t, " (not looked up: the heap was changing)");
	}
}

/* What address a of the domain is, "sym+0xoff (lib+0xoff)", "unnamed
 * static data at lib+0xoff", or its heap's (heap_where(); b, what the
 * index said at the fault, else NULL: asked now): async-signal-safe. */
static void where(struct mpk__text *t, const struct guard_lib *lib, uintptr_t a, const struct guard_block *b)
{
	const struct dsym *syms = tab[lib->index].syms;
	size_t lo = 0, hi = tab[lib->index].n;
	const char *file = lib->file;

	if (guard_heap_block(lib, a)) { /* --heap (guard_heap.c) */
		struct guard_block now;
		if (!b)
			guard_blocks_find(a, &now);
		heap_where(t, lib, a, b ? b : &now);
		return;
	}
	if (a < lib->data_lo || a >= lib->data_hi) {
		/* Not its static data: the domain's other memory. */
		mpk__text_str(t, "memory of its domain outside its static data, at ");
		mpk__text_hex(t, a);
		return;
	}
	while (lo < hi) { /* the last symbol at or below a */
		size_t mid = (lo + hi) / 2;
		if (syms[mid].at <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	int named = lo && a < syms[lo - 1].at + (syms[lo - 1].size ? syms[lo - 1].size : 1);
	if (named) {
		mpk__text_str(t, syms[lo - 1].name);
		mpk__text_str(t, "+");
		mpk__text_hex(t, a - syms[lo - 1].at);
		mpk__text_str(t, " (");
	} else {
		mpk__text_str(t, "unnamed static data at ");
	}
	mpk__text_str(t, file);
	mpk__text_str(t, "+");
	mpk__text_hex(t, a - lib->base);
	if (named)
		mpk__text_str(t, ")");
}

static void put_where(const struct guard_lib *lib, uintptr_t a, const struct guard_block *blk)
{
	char b[512];
	struct mpk__text t = { b, sizeof(b), 0 };

	where(&t, lib, a, blk);
	put(b);
}

/* Whether the library's own code made the access: code that came in
 * through no gate (its constructors, an export too short to patch). */
static int own_code(const struct guard_lib *lib, uintptr_t ip)
{
	return ip >= lib->text_lo && ip < lib->text_hi;
}

/* Enforcing: the line ahead of mpkit's report, where reports go. */
static void report_caught(const struct guard_lib *lib, const struct mpk_fault *f, uintptr_t ip)
{
	char b[768];
	struct mpk__text t = { b, sizeof(b), 0 };
	const char *file = lib->file;
	uintptr_t a = (uintptr_t)f->addr;
	int heap = guard_heap_block(lib, a);
	struct guard_block blk = { GUARD_BLOCK_UNKNOWN, 0, 0 };

	if (heap)
		guard_blocks_find(a, &blk);
	mpk__text_str(&t, "mpkit guard: caught a ");
	mpk__text_str(&t, f->write ? "write" : "read");
	if (ip && own_code(lib, ip)) {
		mpk__text_str(&t, " by ");
		mpk__text_str(&t, file);
		mpk__text_str(&t, "'s own code, entered without a gate,");
	} else {
		const struct guard_lib *by = ip ? guard_lib_at(ip) : NULL;
		mpk__text_str(&t, " from outside ");
		mpk__text_str(&t, file);
		if (by) { /* another guarded library: its code, not through one of file's gates */
			mpk__text_str(&t, " (by ");
			mpk__text_str(&t, by->file);
			mpk__text_str(&t, "'s code)");
		}
	}
	if (heap) {
		mpk__text_str(&t, " into its heap at ");
		mpk__text_hex(&t, a);
		mpk__text_str(&t, ": ");
	} else {
		mpk__text_str(&t, " into its data: ");
	}
	where(&t, lib, a, heap ? &blk : NULL);
	if (blk.kind == GUARD_BLOCK_IN)
		mpk__text_str(&t, " (allocated inside the library)");
	mpk__text_str(&t, "\n");
	mpk_report_write(t.buf, t.len);
}

static void report_first(const struct guard_lib *lib, const struct mpk_fault *f, uintptr_t ip,
			 const struct guard_block *blk)
{
	void *frames[64];
	int n = mpk__bt(frames, 64), i = 0;

	put("mpkit guard: ");
	put(f->write ? "write" : "read");
	put(" of ");
	put_where(lib, (uintptr_t)f->addr, blk);
	put(" at ");
	mpk__fd_hex(STDERR_FILENO, (uintptr_t)f->addr);
	if (own_code(lib, ip)) {
		put(" by the library's own code, entered without a gate, thread ");
	} else {
		const struct guard_lib *by = guard_lib_at(ip);
		put(" from outside the library");
		if (by) { /* another guarded library's code, as the fault line says */
			put(" (by ");
			put(by->file);
			put("'s code)");
		}
		put(", by thread ");
	}
	put_dec((unsigned long)f->tid);
	put(", instruction ");
	mpk__fd_hex(STDERR_FILENO, ip);
	put("\n");
	/* From the faulting instruction out: this handler's frames go. */
	while (i < n && (uintptr_t)frames[i] != ip)
		i++;
	if (i < n)
		mpk__bt_names_fd(frames + i, n - i, STDERR_FILENO);
}

static int on_fault(const struct mpk_fault *f, void *arg)
{
	ucontext_t *uc = fault_uc;

	(void)arg;
	const struct guard_lib *lib = guard_lib_of(f->domain);
	if (!lib)
		return MPK_FAULT_ABORT;
	uintptr_t ip = uc ? (uintptr_t)uc->uc_mcontext.gregs[REG_RIP] : 0;
	/* On hw a signal handler runs with the kernel's default rights, the
	 * library's domain closed, also while its thread is inside the
	 * library (glibc's cancellation unwinds from one, and reads the
	 * library's data on the way): a thread inside the library keeps its
	 * rights there, as a callback does (docs/guard.md, "Signals"). */
	if (f->pkey >= 0 && f->rights != MPK_RW && guard_inside(f->domain) &&
	    !mpk_set(f->domain, MPK_RW))
		return MPK_FAULT_RETRY;
	if (!lib->report || !uc || stepping) {
		report_caught(lib, f, ip);
		return MPK_FAULT_ABORT;
	}
	struct site *s = NULL;
	for (int k = 0; k < SITES && !s; k++) {
		uintptr_t was = 0;
		if (__atomic_load_n(&sites[k].ip, __ATOMIC_ACQUIRE) == ip ||
		    __atomic_compare_exchange_n(&sites[k].ip, &was, ip, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			s = &sites[k];
	}
	if (!s)
		__atomic_add_fetch(&lost, 1, __ATOMIC_RELAXED);
	else if (__atomic_fetch_add(&s->count, 1, __ATOMIC_RELAXED) == 0) {
		s->addr = (uintptr_t)f->addr;
		s->write = f->write;
		s->lib = lib;
		s->blk.kind = GUARD_BLOCK_UNKNOWN;
		if (guard_heap_block(lib, s->addr))
			guard_blocks_find(s->addr, &s->blk);
		report_first(lib, f, ip, &s->blk);
	}
	/* One instruction with the domain open, then the SIGTRAP. */
	step_rights = f->rights;
	step_dom = lib->domain;
	if (mpk_set(lib->domain, MPK_RW))
		return MPK_FAULT_ABORT;
	stepping = 1;
	uc->uc_mcontext.gregs[REG_EFL] |= TRAP_FLAG;
	return MPK_FAULT_RETRY;
}

/* Before mpkit's handler: the frame, for the instruction and its flags. */
static void on_segv(int sig, siginfo_t *si, void *uc)
{
	ucontext_t *was = fault_uc;

	fault_uc = uc;
	mpkit_segv.sa_sigaction(sig, si, uc);
	fault_uc = was;
}

static void on_trap(int sig, siginfo_t *si, void *uc)
{
	ucontext_t *u = uc;
	int saved = errno;

	if (!stepping) {
		if (old_trap.sa_flags & SA_SIGINFO)
			old_trap.sa_sigaction(sig, si, uc);
		else if (old_trap.sa_handler != SIG_IGN && old_trap.sa_handler != SIG_DFL)
			old_trap.sa_handler(sig);
		else {
			sigaction(SIGTRAP, &old_trap, NULL);
			raise(SIGTRAP);
		}
		errno = saved;
		return;
	}
	u->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)TRAP_FLAG;
	stepping = 0;
	if (mpk_set_interrupted(step_dom, step_rights, uc))
		abort();
	errno = saved;
}

/* l's symbols; the fault handlers with the first library guarded, the
 * trap's with the first that reports (mpk_guard_library() may guard
 * one that does after others that do not). */
int guard_report_start(struct guard_lib *l)
{
	static int installed, trapping;
	struct sigaction sa;

	if (load_syms(l))
		return -1;
	if (l->report && !trapping) {
		memset(&old_trap, 0, sizeof(old_trap));
		struct sigaction tr = { .sa_sigaction = on_trap, .sa_flags = SA_SIGINFO | SA_ONSTACK };
		sigemptyset(&tr.sa_mask);
		if (sigaction(SIGTRAP, &tr, &old_trap))
			return -1;
		trapping = 1;
	}
	if (installed)
		return 0;
	installed = 1;
	if (mpk_fault_handler_install(on_fault, NULL) || sigaction(SIGSEGV, NULL, &mpkit_segv) ||
	    !(mpkit_segv.sa_flags & SA_SIGINFO))
		return -1;
	mpk__bt_prime();
	sa = mpkit_segv;
	sa.sa_sigaction = on_segv;
	return sigaction(SIGSEGV, &sa, NULL);
}

/* The list, at exit: for each library, every instruction that wrote
 * into its data, with its count. */
void guard_report_end(void)
{
	for (int i = 0; i < guard_nlibs; i++) {
		const struct guard_lib *lib = &guard_libs[i];
		unsigned long total = i ? 0 : lost, places = 0;

		if (!lib->domain)
			continue;
		for (int k = 0; k < SITES; k++)
			if (sites[k].ip && sites[k].lib == lib)
				total += sites[k].count, places++;
		put("mpkit guard: ");
		put(lib->file);
		put(": ");
		put_dec(total);
		put(total == 1 ? " access" : " accesses");
		put(" from outside into its data, by ");
		put_dec(places);
		put(places == 1 ? " instruction\n" : " instructions\n");
		for (int k = 0; k < SITES; k++) {
			Dl_info di;
			if (!sites[k].ip || sites[k].lib != lib)
				continue;
			put("mpkit guard:   ");
			put_dec(sites[k].count);
			put(sites[k].write ? " write" : " read");
			put(sites[k].count == 1 ? " by " : "s by ");
			if (dladdr((void *)sites[k].ip, &di) && di.dli_fname) {
				const char *b = strrchr(di.dli_fname, '/');
				put(b ? b + 1 : di.dli_fname);
				put("+");
				mpk__fd_hex(STDERR_FILENO, sites[k].ip - (uintptr_t)di.dli_fbase);
			} else {
				mpk__fd_hex(STDERR_FILENO, sites[k].ip);
			}
			put(", first of ");
			put_where(lib, sites[k].addr, &sites[k].blk);
			put("\n");
		}
		if (!i && lost) {
			put("mpkit guard:   ");
			put_dec(lost);
			put(" by instructions past the first 256 (into any library's data)\n");
		}
	}
}
