/* SPDX-License-Identifier: MIT */
/*
 * The opt-in SIGSEGV handler: a stray access to domain memory becomes a
 * report naming the domain; anything else goes to whoever handled SIGSEGV
 * before.  Everything here is async-signal-safe: no malloc, no stdio, no
 * locks; the region table and key owners are read lock-free.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "os.h"
#include "window.h"
#include "../shared/unwind.h"

#ifndef SEGV_PKUERR
#define SEGV_PKUERR 4
#endif

static struct sigaction old_action;
static bool installed;
/* Requests for the handler so far (under mpk_g.lock): who installed it
 * can tell whether anyone asked for it since (mpk__fault_handler_drop). */
static unsigned long asks;
static mpk_fault_fn user_fn;
static void *user_arg;

/* ---- async-signal-safe formatting ---- */

struct out {
	char *buf;
	size_t size, len;
};

static void put(struct out *o, const char *s)
{
	for (; *s; s++, o->len++)
		if (o->len + 1 < o->size)
			o->buf[o->len] = *s;
	if (o->size)
		o->buf[o->len < o->size ? o->len : o->size - 1] = 0;
}

static void put_num(struct out *o, unsigned long long v, unsigned base)
{
	char tmp[24], *p = tmp + sizeof(tmp);

	*--p = 0;
	do {
		*--p = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	if (base == 16)
		put(o, "0x");
	put(o, p);
}

static const char *rights_name(int r)
{
	switch (r) {
	case MPK_NONE: return "none";
	case MPK_READ: return "read";
	case MPK_RW: return "read-write";
	}
	return "unknown";
}

MPK_EXPORT size_t mpk_fault_format(const struct mpk_fault *f, char *buf, size_t size)
{
	struct out o = { buf, size, 0 };

	if (!f || (!buf && size)) {
		errno = EINVAL;
		return 0;
	}
	put(&o, "mpkit: protection fault: ");
	put(&o, f->write ? "write" : "read");
	put(&o, " of domain \"");
	put(&o, f->domain_name ? f->domain_name : "?");
	put(&o, "\" at ");
	put_num(&o, (uintptr_t)f->addr, 16);
	if (f->region && (uintptr_t)f->addr < (uintptr_t)f->region) {
		put(&o, " (");
		put_num(&o, (uintptr_t)f->region - (uintptr_t)f->addr, 10);
		put(&o, " bytes before region ");
	} else if (f->region && f->offset >= f->region_len) {
		put(&o, " (");
		put_num(&o, f->offset - f->region_len, 10);
		put(&o, " bytes past the end of region ");
	} else {
		put(&o, " (offset ");
		put_num(&o, f->offset, 16);
		put(&o, " in region ");
	}
	put_num(&o, (uintptr_t)f->region, 16);
	put(&o, ", ");
	put_num(&o, f->region_len, 10);
	put(&o, " bytes");
	if (f->region && (f->offset >= f->region_len || (uintptr_t)f->addr < (uintptr_t)f->region))
		put(&o, ", in its guard page: an overflow of a block of its own?");
	put(&o, ")\nmpkit:   thread ");
	put_num(&o, (unsigned long long)f->tid, 10);
	put(&o, " holds ");
	put(&o, rights_name(f->rights));
	if (f->pkey >= 0) {
		put(&o, ", key ");
		put_num(&o, (unsigned)f->pkey, 10);
	} else {
		/* On hw a keyless domain is a virtual one, protected with
		 * mprotect() until it wins a key back. */
		put(&o, __atomic_load_n(&mpk_g.backend, __ATOMIC_RELAXED) == MPK_BACKEND_HW
				? ", no key now (virtual domain: mprotect)"
				: ", no key (soft backend)");
	}
	put(&o, f->si_code == SEGV_PKUERR ? ", SEGV_PKUERR\n" : ", SEGV_ACCERR\n");
	return o.len;
}

static void report(const struct mpk_fault *f, void *uc)
{
	char small[1024];
	struct mpk__text fallback = { small, sizeof(small), 0 }, *t = mpk__report_open(&fallback);
	size_t n = mpk_fault_format(f, t->buf + t->len, t->size - t->len);

	t->len += n < t->size - t->len ? n : t->size - t->len - 1;
	mpk__backtrace_print(t, (uintptr_t)mpk_arch_frame_ip(uc));
	mpk__report_close(t);
}

/* ---- the handler ---- */

static void chain(int sig, siginfo_t *si, void *uc)
{
	if (old_action.sa_flags & SA_SIGINFO) {
		old_action.sa_sigaction(sig, si, uc);
		return;
	}
	if (old_action.sa_handler != SIG_DFL && old_action.sa_handler != SIG_IGN) {
		old_action.sa_handler(sig);
		return;
	}
	/* Default action: uninstall and let the access fault again, or
	 * re-raise a SIGSEGV that was sent rather than caused. */
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	mpk_os_sigaction(SIGSEGV, &dfl, NULL);
	if (si->si_code <= 0)
		raise(SIGSEGV);
}

/* A window's guard page (reserved, inside no region) is hit by running
 * off the end of the region before it (a heap block's of its own: the
 * block ends flush against it, or nearly), or before the start of the
 * one after it: that region (of two, the nearer), or NULL. */
static struct mpk_region *guarded(const void *addr)
{
	uintptr_t a = (uintptr_t)addr, page = mpk_os_page_size(), at = a & ~(page - 1);

	if (!mpk__in_window(a))
		return NULL;
	struct mpk_region *before = mpk__region_lookup((void *)(at - 1));
	struct mpk_region *after = mpk__region_lookup((void *)(at + page));
	return before && (!after || a - at < page / 2) ? before : after;
}

static bool describe(siginfo_t *si, void *uc, struct mpk_fault *f)
{
	struct mpk_region *r;
	struct mpk_domain *d;
	mpk_reg_t reg;

	/* Not ours (a NULL pointer is SEGV_MAPERR): no lookup at all. */
	if (si->si_code != SEGV_PKUERR && si->si_code != SEGV_ACCERR)
		return false;
	r = mpk__region_lookup(si->si_addr);
	if (!r && si->si_code == SEGV_ACCERR)
		r = guarded(si->si_addr);
	d = r ? __atomic_load_n(&r->domain, __ATOMIC_ACQUIRE) : NULL;
	if (!d && si->si_code == SEGV_PKUERR)
		d = mpk__domain_by_key(si->si_pkey);
	if (!d || !mpk__domain_ok(d))
		return false;
	memset(f, 0, sizeof(*f));
	f->domain = d;
	f->domain_name = d->name;
	f->addr = si->si_addr;
	if (r) {
		f->region = (void *)__atomic_load_n(&r->start, __ATOMIC_ACQUIRE);
		f->region_len = __atomic_load_n(&r->len, __ATOMIC_RELAXED);
		f->offset = (uintptr_t)si->si_addr - (uintptr_t)f->region;
	}
	f->write = mpk_arch_fault_is_write(uc);
	f->pkey = si->si_code == SEGV_PKUERR ? (int)si->si_pkey : -1;
	f->si_code = si->si_code;
	f->tid = mpk_os_gettid();
	if (d->key >= 0)
		f->rights = mpk_arch_frame_reg_get(uc, &reg) ? mpk_arch_key_rights(reg, d->key) : -1;
	else
		f->rights = mpk__soft_get(d);
	return true;
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	struct mpk_fault f;

	/* Watchpoints and code windows first: their faults are not strays.
	 * The hooks run before errno is read, and keep it themselves: a
	 * watched page may hold this thread's TLS (musl's loader puts it in
	 * the free tail of a data page), readable only once a hook opens it. */
	if (mpk__fault_hooks_run(si, uc))
		return;
	int saved = errno;
	if (mpk__code_fault(si, uc)) {
		errno = saved;
		return;
	}
	if (!describe(si, uc, &f)) {
		chain(sig, si, uc);
		errno = saved;
		return;
	}
	__atomic_add_fetch(&mpk_g.faults, 1, __ATOMIC_RELAXED);
	mpk_fault_fn fn = __atomic_load_n(&user_fn, __ATOMIC_ACQUIRE);
	if (fn) {
		bool hw = mpk_g.backend == MPK_BACKEND_HW;
		mpk_reg_t reg;
		/* Handlers start with the kernel's default rights; give the
		 * callback the interrupted thread's, so mpk_get()/mpk_set()
		 * act on those, and hand back what it leaves. */
		if (hw && mpk_arch_frame_reg_get(uc, &reg))
			mpk_arch_reg_write(reg);
		if (fn(&f, user_arg) == MPK_FAULT_RETRY) {
			if (hw)
				mpk_arch_frame_reg_set(uc, mpk_arch_reg_read());
			errno = saved;
			return;
		}
	}
	report(&f, uc);
	abort();
}

/* Lock held. */
static int install_locked(void)
{
	struct sigaction sa;

	asks++;
	if (!installed) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_segv;
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		/* A revocation (broadcast.c) delivered on top of this handler
		 * would edit only the handler's PKRU, which the callback path
		 * replaces with the frame's: hold it until we return, when it
		 * edits the frame that counts. */
		sigaddset(&sa.sa_mask, MPK_SIGNAL);
		if (mpk_os_sigaction(SIGSEGV, &sa, &old_action))
			return -1;
		installed = true;
	}
	return 0;
}

int mpk__fault_handler_ensure(unsigned long *ticket)
{
	pthread_mutex_lock(&mpk_g.lock);
	bool was = installed;
	int rc = install_locked();
	if (ticket)
		*ticket = !rc && !was ? asks : 0;
	pthread_mutex_unlock(&mpk_g.lock);
	return rc;
}

void mpk__fault_handler_drop(unsigned long ticket)
{
	pthread_mutex_lock(&mpk_g.lock);
	if (ticket && installed && asks == ticket && !sigaction(SIGSEGV, &old_action, NULL))
		installed = false;
	pthread_mutex_unlock(&mpk_g.lock);
}

MPK_EXPORT int mpk_fault_handler_install(mpk_fault_fn fn, void *arg)
{
	if (mpk__ensure_init())
		return -1;
	pthread_mutex_lock(&mpk_g.lock);
	if (install_locked()) {
		pthread_mutex_unlock(&mpk_g.lock);
		return -1;
	}
	__atomic_store_n(&user_fn, NULL, __ATOMIC_RELEASE);
	user_arg = arg;
	__atomic_store_n(&user_fn, fn, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&mpk_g.lock);
	return 0;
}

MPK_EXPORT int mpk_fault_handler_remove(void)
{
	int rc = 0;

	pthread_mutex_lock(&mpk_g.lock);
	if (!installed) {
		errno = EINVAL;
		rc = -1;
	} else if (!(rc = mpk_os_sigaction(SIGSEGV, &old_action, NULL))) {
		installed = false;
		user_fn = NULL;
	}
	pthread_mutex_unlock(&mpk_g.lock);
	return rc;
}
