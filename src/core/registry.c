/* SPDX-License-Identifier: MIT */
/*
 * The registry page (see registry.h): a private anonymous mapping of
 * MPK_REG_SIZE bytes that starts with MPK_REG_MAGIC, named
 * [anon:mpk:registry] where the kernel names memory.  A reader finds it in
 * /proc/PID/maps by its size (or name) and magic, and copies it while seq
 * stays even and unchanged.  Private, so a forked child keeps a copy that
 * is right for it: its mappings are the parent's at the fork.  Made with
 * the first region; writers hold mpk_g.lock.
 *
 * It also lets two mpkits in one process find each other (a program
 * linked with libmpkit.a, run under the drop-in allocator, which brings
 * libmpkit.so): one's lockdown trusts the other's system-call site and
 * sets its locked, after which the other's memory calls take that site
 * (os.c), never libc, whose calls the filter denies on a move
 * (MREMAP_FIXED) or a key (pkey_mprotect).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../arch/arch.h"
#include "internal.h"
#include "os.h"
#include "../shared/procmaps.h"
#include "../shared/registry.h"

static struct mpk_reg_header *reg;
/* Which region each entry is (entry i: owner[i]), for the swap in del. */
static struct mpk_region **owner;
/* Writers: region changes hold mpk_g.lock, but a soft rights change holds
 * only its domain's lock, and entries of two domains share the seqlock.
 * A spinning flag, not a mutex: it is held for a few stores (no call, no
 * allocation, no system call under it), and a soft open or close takes it
 * between its mprotect() calls, where a mutex's library calls showed.
 * Never held across fork(): its writers hold locks fork() waits for. */
static bool busy;

static void reg_lock(void)
{
	while (__atomic_exchange_n(&busy, true, __ATOMIC_ACQUIRE))
		sched_yield(); /* rare: two domains' changes at once */
}

static void reg_unlock(void)
{
	__atomic_store_n(&busy, false, __ATOMIC_RELEASE);
}

static struct mpk_reg_header *registry(void)
{
	if (reg)
		return reg;
	/* Between two PROT_NONE pages of its own, so that the kernel never
	 * merges it with a neighbour: readers find it by its exact size. */
	size_t page = mpk_os_page_size();
	char *g = mmap(NULL, MPK_REG_SIZE + 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g == MAP_FAILED)
		return NULL;
	void *p = g + page;
	uint32_t cap = (MPK_REG_SIZE - sizeof(*reg)) / sizeof(reg->entry[0]);
	void *o = mmap(NULL, cap * sizeof(*owner), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (o == MAP_FAILED || mprotect(p, MPK_REG_SIZE, PROT_READ | PROT_WRITE)) {
		if (o != MAP_FAILED)
			munmap(o, cap * sizeof(*owner));
		munmap(g, MPK_REG_SIZE + 2 * page);
		return NULL;
	}
	owner = o;
	reg = p;
	reg->cap = cap;
	reg->syscall_ip = (uintptr_t)mpk_arch_syscall_ip;
	memcpy(reg->magic, MPK_REG_MAGIC, sizeof(reg->magic));
	__atomic_store_n(&mpk_os_peer_lock, &reg->locked, __ATOMIC_RELEASE);
	mpk_os_name_region(p, MPK_REG_SIZE, "registry");
	return reg;
}

/* The seqlock around an update: odd while entries change. */
static void begin(struct mpk_reg_header *r)
{
	__atomic_store_n(&r->seq, r->seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static void end(struct mpk_reg_header *r)
{
	__atomic_store_n(&r->seq, r->seq + 1, __ATOMIC_RELEASE);
}

static void expect(struct mpk_reg_entry *e, const struct mpk_region *r)
{
	int key, prot;

	mpk__region_expect(r, &key, &prot);
	e->len = r->len; /* a vault chunk's grows */
	e->key = key;
	e->prot = prot;
}

void mpk__registry_add(struct mpk_region *rg)
{
	struct mpk_reg_header *r = registry();

	rg->reg = 0;
	if (!r)
		return;
	reg_lock();
	begin(r);
	if (r->count < r->cap) {
		owner[r->count] = rg;
		struct mpk_reg_entry *e = &r->entry[r->count++];
		e->start = rg->start;
		e->len = rg->len;
		expect(e, rg);
		_Static_assert(sizeof(e->name) == sizeof(rg->domain->name), "a domain's name fits whole");
		memcpy(e->name, rg->domain->name, sizeof(e->name));
		rg->reg = r->count;
	} else {
		r->dropped++;
	}
	end(r);
	reg_unlock();
}

void mpk__registry_del(struct mpk_region *rg)
{
	struct mpk_reg_header *r = reg;

	if (!r || !rg->reg)
		return;
	reg_lock();
	uint32_t i = rg->reg - 1;
	begin(r);
	r->entry[i] = r->entry[--r->count];
	owner[i] = owner[r->count];
	owner[i]->reg = i + 1;
	end(r);
	reg_unlock();
	rg->reg = 0;
}

/* The entries of the regions from first on (one, or the whole list). */
static void sync_entries(struct mpk_region *first, bool all)
{
	struct mpk_reg_header *r = reg;

	if (!r)
		return;
	reg_lock();
	begin(r);
	for (struct mpk_region *rg = first; rg; rg = all ? rg->next : NULL)
		if (rg->reg)
			expect(&r->entry[rg->reg - 1], rg);
	end(r);
	reg_unlock();
}

void mpk__registry_sync(struct mpk_domain *d)
{
	sync_entries(d->regions, true);
}

void mpk__registry_soft(struct mpk_domain *d, int prot)
{
	struct mpk_reg_header *r = reg;

	if (!r)
		return;
	/* A key taken meanwhile: expect() reads it. */
	if (__atomic_load_n(&d->key, __ATOMIC_ACQUIRE) >= 0) {
		sync_entries(d->regions, true);
		return;
	}
	/* What expect() writes for a keyless domain, without asking again
	 * for what the caller knows: no key, the pages' new protection. */
	reg_lock();
	begin(r);
	for (struct mpk_region *rg = d->regions; rg; rg = rg->next)
		if (rg->reg) {
			struct mpk_reg_entry *e = &r->entry[rg->reg - 1];
			e->len = rg->len;
			e->key = 0;
			e->prot = mpk__region_prot(rg, prot, 0);
		}
	end(r);
	reg_unlock();
}

void mpk__registry_set(struct mpk_region *r)
{
	sync_entries(r, false);
}

/* Copies len bytes at addr of this process into buf, as another process
 * would read them: no protection key applies (a closed domain's page
 * would fault a plain read). */
static bool peek(uintptr_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)addr, len };

	return syscall(SYS_process_vm_readv, (long)getpid(), &l, 1L, &r, 1L, 0L) == (long)len;
}

int mpk__registry_peers(uintptr_t *ips, uint64_t **locked, size_t max)
{
	struct mpk_procmaps pm;
	struct mpk_procmaps_vma v;
	struct mpk_reg_header h;
	size_t n = 0;
	int r;

	if (mpk_procmaps_open(&pm, NULL, NULL))
		return -1;
	while ((r = mpk_procmaps_next(&pm, &v)) > 0) {
		if (v.lo == (uintptr_t)reg || v.hi - v.lo != MPK_REG_SIZE || strcmp(v.perms, "rw-p") ||
		    v.inode || (v.path[0] && strcmp(v.path, "[anon:mpk:registry]")) ||
		    !peek(v.lo, &h, sizeof(h)) || memcmp(h.magic, MPK_REG_MAGIC, sizeof(h.magic)) ||
		    !h.syscall_ip)
			continue;
		if (n == max) {
			r = -1;
			errno = E2BIG;
			break;
		}
		ips[n] = (uintptr_t)h.syscall_ip;
		locked[n++] = &((struct mpk_reg_header *)(uintptr_t)v.lo)->locked;
	}
	int err = errno;
	mpk_procmaps_close(&pm);
	errno = err;
	return r < 0 ? -1 : (int)n;
}
