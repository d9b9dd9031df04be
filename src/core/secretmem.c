/* SPDX-License-Identifier: MIT */
/*
 * Memory the kernel does not map for itself: memfd_secret(2) (Linux 5.14;
 * on by default since 6.5, secretmem.enable=1 before).  Its pages leave
 * the kernel's direct map, so process_vm_readv(), /proc/PID/mem, ptrace
 * and the I/O system calls cannot read them on the program's behalf; the
 * key (pkey_mprotect) and mprotect work on them as on any page.  Vaults
 * take it wherever the kernel has it, and every region of a domain made
 * with MPK_DOMAIN_SECRETMEM; MPKIT_SECRETMEM says whether a vault may fall
 * back to ordinary memory (DONTDUMP, WIPEONFORK) where it is missing.
 *
 * The mapping is MAP_SHARED (the only kind memfd_secret allows), which
 * MADV_WIPEONFORK ignores: it is MADV_DONTFORK instead, and a forked
 * child maps the ranges afresh (zeros, as a wiped vault) in its fork
 * handler, so no hole is left where another mmap() could land.  The
 * kernel locks secretmem pages itself and charges the whole mapping to
 * RLIMIT_MEMLOCK when it is made, pages in use or not: past the limit
 * the mmap() fails with EAGAIN, said here as ENOMEM.  So a vault chunk
 * maps secret memory only over its first pages and leaves the rest
 * reserved, and grows by mapping more (mpk__secret_extend): one 1 MiB
 * chunk per vault would otherwise take an eighth of the usual 8 MiB limit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../shared/env.h"
#include "internal.h"
#include "os.h"

#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif

bool mpk__secret_at(const void *addr)
{
	struct mpk_region *r = mpk__region_lookup(addr);

	return r && __atomic_load_n(&r->secret, __ATOMIC_RELAXED);
}

bool mpk__domain_secretmem(const struct mpk_domain *d)
{
	return d->secretmem;
}

/* A memfd_secret file of len bytes: its fd, or -1/errno (ENOSYS and its
 * like: missing or refused; see missing()). */
static int secret_file(size_t len)
{
	int fd = (int)syscall(SYS_memfd_secret, (unsigned)O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)len)) {
		int err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

/* Whether memfd_secret's errno means the kernel lacks it or will not give
 * it (no syscall, secretmem off, a seccomp filter), rather than a limit. */
static bool missing(int err)
{
	return err != EMFILE && err != ENFILE && err != ENOMEM && err != EAGAIN;
}

int mpk__secretmem_mode(void)
{
	return mpk__env_parse(MPK_ENV_SECRETMEM, 0);
}

int mpk__secretmem_probe(void)
{
	int fd = secret_file(mpk_os_page_size());

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* Replace [p, p+len) (reserved, or mapped by mpkit) with secret memory of
 * protection prot.  0, or -1: EOPNOTSUPP when the kernel lacks it,
 * ENOMEM at RLIMIT_MEMLOCK or out of memory; p is then reserved
 * (PROT_NONE) as before. */
static int map_secret(void *p, size_t len, int prot)
{
	int fd = secret_file(len);

	if (fd < 0) {
		errno = missing(errno) ? EOPNOTSUPP : ENOMEM;
		return -1;
	}
	void *q = mpk_os_map_fd(p, len, prot, MAP_SHARED | MAP_FIXED, fd, 0);
	int err = errno;
	close(fd); /* the mapping holds the file */
	if (!q || mpk_os_madvise(p, len, MADV_DONTFORK)) {
		err = q ? errno : err;
		/* A failed MAP_FIXED may leave a hole: reserved again. */
		mpk_os_map_at(p, len, PROT_NONE, MAP_FIXED | MAP_NORESERVE);
		errno = err == EAGAIN ? ENOMEM : err;
		return -1;
	}
	return 0;
}

/* Ordinary memory for a vault: out of core dumps, zero in a child. */
static int vault_anon(void *p, size_t len)
{
	return mpk_os_madvise(p, len, MADV_DONTDUMP) || mpk_os_madvise(p, len, MADV_WIPEONFORK)
		       ? -1 : 0;
}

int mpk__secret_extend(void *p, size_t len, int prot)
{
	return map_secret(p, len, prot);
}

int mpk__secret_reserve(void *p, size_t len)
{
	/* In place: never a hole another mmap() could take. */
	return mpk_os_map_at(p, len, PROT_NONE, MAP_FIXED | MAP_NORESERVE) ? 0 : -1;
}

void *mpk__secret_window_map(bool must, bool vault, size_t len, size_t first, size_t align,
			     int prot, bool *secret)
{
	int mode = mpk__secretmem_mode();

	*secret = false;
	if (!must && (!vault || mode == MPK_SECRETMEM_OFF))
		goto plain;
	void *p = mpk__window_map(len, align, PROT_NONE);
	if (!p)
		return NULL;
	if (!map_secret(p, first, prot)) {
		*secret = true;
		return p;
	}
	int err = errno;
	/* Missing: a vault falls back unless told not to; a limit never. */
	if (err != EOPNOTSUPP || must || mode == MPK_SECRETMEM_REQUIRE) {
		mpk__window_unmap(p, len);
		errno = err;
		return NULL;
	}
	if (mpk_os_map_at(p, len, prot, MAP_FIXED) && !vault_anon(p, len))
		return p;
	err = errno;
	mpk__window_unmap(p, len);
	errno = err;
	return NULL;
plain:
	p = mpk__window_map(len, align, prot);
	if (p && vault && vault_anon(p, len)) {
		err = errno;
		mpk__window_unmap(p, len);
		errno = err;
		return NULL;
	}
	return p;
}

/* In a forked child: the secret part of each secret region was not
 * inherited (DONTFORK); it gets fresh pages with its domain's protection,
 * as a wiped vault.  A vault chunk's tail, reserved memory, was. */
static void renew(struct mpk_region *r, void *arg)
{
	(void)arg;
	if (!r->secret)
		return;
	void *p = (void *)r->start;
	/* Read-write, as mpk__protect_new() takes fresh pages to be. */
	int rw = PROT_READ | PROT_WRITE;
	if (map_secret(p, r->len, rw) &&
	    (!mpk_os_map_at(p, r->len, rw, MAP_FIXED) || vault_anon(p, r->len))) {
		mpk_os_mprotect(p, r->len, PROT_NONE);
		return; /* no memory: the range stays reserved, PROT_NONE */
	}
	mpk__protect_new(r->domain, p, r->len, r->exec);
	mpk_os_name_region(p, r->cap, r->domain->name);
}

void mpk__secretmem_child(void)
{
	mpk__regions_each(renew, NULL);
}
