/* SPDX-License-Identifier: MIT */
/*
 * The registry page (see registry.h): a private anonymous mapping of
 * MPK_REG_SIZE bytes that starts with MPK_REG_MAGIC, named
 * [anon:mpk:registry] where the kernel names memory.  A reader finds it in
 * /proc/PID/maps by its size (or name) and magic, and copies it while seq
 * stays even and unchanged.  Private, so a forked child keeps a copy that
 * is right for it: its mappings are the parent's at the fork.  Made with
 * the first region; writers hold mpk_g.lock.
 */
#define _GNU_SOURCE
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "os.h"
#include "../shared/registry.h"

static struct mpk_reg_header *reg;

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
	if (mprotect(p, MPK_REG_SIZE, PROT_READ | PROT_WRITE)) {
		munmap(g, MPK_REG_SIZE + 2 * page);
		return NULL;
	}
	reg = p;
	reg->cap = (MPK_REG_SIZE - sizeof(*reg)) / sizeof(reg->entry[0]);
	memcpy(reg->magic, MPK_REG_MAGIC, sizeof(reg->magic));
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

void mpk__registry_add(uintptr_t start, size_t len, const char *name)
{
	struct mpk_reg_header *r = registry();

	if (!r)
		return;
	begin(r);
	if (r->count < r->cap) {
		struct mpk_reg_entry *e = &r->entry[r->count++];
		e->start = start;
		e->len = len;
		strncpy(e->name, name, sizeof(e->name) - 1);
		e->name[sizeof(e->name) - 1] = 0;
	} else {
		r->dropped++;
	}
	end(r);
}

void mpk__registry_del(uintptr_t start)
{
	struct mpk_reg_header *r = reg;

	if (!r)
		return;
	for (uint32_t i = 0; i < r->count; i++) {
		if (r->entry[i].start != start)
			continue;
		begin(r);
		r->entry[i] = r->entry[--r->count];
		end(r);
		return;
	}
}
