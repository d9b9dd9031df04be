/* SPDX-License-Identifier: MIT */
/*
 * Watchpoints from protection.  The pages of a watched range are closed to
 * every thread: on hw by the key of a pinned domain of mpkit's own (writes
 * denied, or all access for read watches), else by mprotect().  An access
 * there faults; if it falls inside a range it is reported; then the
 * faulting thread gets the page for one instruction (its PKRU in the
 * signal frame on hw, for it alone; the page on soft, for every thread),
 * the trap flag stops it after that instruction, and the SIGTRAP handler
 * closes the page again.  The tables are fixed arrays, read without a lock
 * by the handlers and changed under one by mpk_watch()/mpk_unwatch().
 *
 * Old and new values (MPK_WATCH_VALUES): the fault handler copies the
 * watched bytes and parks the hit in a slot of a fixed pool; the SIGTRAP
 * handler that ends the step copies them again, before it closes the page,
 * and calls back.  Both copies go through process_vm_readv(), which the
 * page's key does not stop and which fails rather than faults, so a handler
 * never faults on what it reads.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "../core/core.h"
#include "../shared/insn.h"
#include "../shared/unwind.h"

#define WATCH_MAX 64
#define WATCH_PAGES 256
#define STEP_MAX 4  /* pages one instruction may open (movs, push to a watched page...) */
#define FRAMES 32
#define PENDING 32  /* value hits parked between a fault and its trap, all threads */

enum { MODE_OFF = 0, MODE_WRITES = 1, MODE_ALL = 2 };

struct watch {
	uintptr_t addr; /* 0: free; published last, cleared first */
	size_t len;
	unsigned flags;
	mpk_watch_fn fn;
	void *arg;
};

struct wpage {
	uintptr_t page; /* 0: free */
	int orig;       /* protection before it was watched */
	int mode;       /* MODE_*: how it is closed now */
	int open;       /* soft: threads stepping through it */
};

static struct watch watches[WATCH_MAX];
static struct wpage pages[WATCH_PAGES];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* [MODE_WRITES - 1]: every thread reads; [MODE_ALL - 1]: no access. */
static mpk_domain *dom[2];
static int dom_key[2] = { -1, -1 };
static struct sigaction old_trap;
static bool trap_installed;

/* What this thread opened for the instruction it is stepping. */
struct opened {
	int key;        /* >= 0: PKRU bits restored; else page index */
	int page;
	mpk_reg_t bits;
};
static __thread struct opened t_open[STEP_MAX] __attribute__((tls_model("initial-exec")));
static __thread int t_nopen __attribute__((tls_model("initial-exec")));

/* A MPK_WATCH_VALUES hit waiting for its instruction to complete.  Found
 * by thread id, not through thread-local storage: musl puts the static
 * TLS that outgrows its built-in block in memory from the free tails of
 * data pages, which may be a watched page. */
struct pending {
	pid_t owner;       /* 0: free */
	bool delivering;   /* being called back (a callback's own hit parks anew) */
	unsigned long seq; /* delivered in this order */
	bool rd, wr;
	mpk_watch_fn fn;
	void *arg;
	struct mpk_watch_hit hit;
	void *frames[FRAMES];
	uint8_t old[MPK_WATCH_VALUE_MAX], now[MPK_WATCH_VALUE_MAX];
};
static struct pending pending[PENDING];
static unsigned long parked, parked_seq; /* slots in use; the last seq given */

static bool hw(void)
{
	return mpk__backend() == MPK_BACKEND_HW;
}

static int page_find(uintptr_t pg)
{
	for (int i = 0; i < WATCH_PAGES; i++)
		if (__atomic_load_n(&pages[i].page, __ATOMIC_ACQUIRE) == pg)
			return i;
	return -1;
}

/* The protection a closed page has where no key closes it. */
static int closed_prot(const struct wpage *p, int mode)
{
	if (mode == MODE_ALL)
		return PROT_NONE;
	return mode == MODE_WRITES ? p->orig & ~PROT_WRITE : p->orig;
}

/* One opening of page pi ends: the last one closes it again. */
static void page_close(int pi, size_t ps)
{
	struct wpage *p = &pages[pi];

	if (__atomic_sub_fetch(&p->open, 1, __ATOMIC_ACQ_REL) == 0) {
		int mode = __atomic_load_n(&p->mode, __ATOMIC_ACQUIRE);
		mpk_os_mprotect((void *)p->page, ps, closed_prot(p, mode));
	}
}

/* Close page i the way mode says (or give it back as it was: MODE_OFF). */
static int page_apply(int i, int mode)
{
	struct wpage *p = &pages[i];
	size_t ps = mpk_os_page_size();
	int key = mode ? dom_key[mode - 1] : 0, rc;

	if (!hw())
		rc = mpk_os_mprotect((void *)p->page, ps, closed_prot(p, mode));
	else if (key > 0)
		rc = mpk_os_pkey_mprotect((void *)p->page, ps, p->orig, key);
	else
		rc = mpk_os_pkey_mprotect((void *)p->page, ps, closed_prot(p, mode), 0);
	if (!rc)
		__atomic_store_n(&p->mode, mode, __ATOMIC_RELEASE);
	return rc;
}

/* The mode page pg needs for the watches now published. */
static int page_want(uintptr_t pg)
{
	size_t ps = mpk_os_page_size();
	int mode = MODE_OFF;

	for (int i = 0; i < WATCH_MAX; i++) {
		struct watch *w = &watches[i];
		if (!w->addr || w->addr >= pg + ps || w->addr + w->len <= pg)
			continue;
		mode = (w->flags & MPK_WATCH_READ) ? MODE_ALL : (mode ? mode : MODE_WRITES);
	}
	return mode;
}

/* Bring every page of [lo, hi) to what the watches want; pages no longer
 * watched are given back and their slots freed.  0, or -1 at the first
 * failure. */
static int pages_sync(uintptr_t lo, uintptr_t hi)
{
	size_t ps = mpk_os_page_size();

	for (uintptr_t pg = lo; pg < hi; pg += ps) {
		int i = page_find(pg);
		if (i < 0)
			continue;
		int want = page_want(pg);
		if (want != pages[i].mode && page_apply(i, want))
			return -1;
		if (want == MODE_OFF)
			__atomic_store_n(&pages[i].page, 0, __ATOMIC_RELEASE);
	}
	return 0;
}

/* The domain closing pages in mode (made on first use, pinned to its key);
 * *made says this call made it. */
static int domain_ready(int mode, bool *made)
{
	static const char *const names[2] = { "mpk-watch", "mpk-watch-read" };

	if (dom[mode - 1])
		return 0;
	mpk_domain *d = mpk_domain_create(names[mode - 1], mode == MODE_ALL ? MPK_NONE : MPK_READ,
					  MPK_DOMAIN_SHARED);
	if (!d)
		return -1;
	dom_key[mode - 1] = mpk__domain_pin(d, true); /* keyless (no key free): mprotect() it is */
	dom[mode - 1] = d;
	*made = true;
	return 0;
}

/* Undo domain_ready() for a watch that failed: no page carries its key. */
static void domain_drop(int mode)
{
	mpk_domain *d = dom[mode - 1];

	dom[mode - 1] = NULL;
	dom_key[mode - 1] = -1;
	mpk__domain_pin(d, false);
	mpk_domain_destroy(d);
}

static void on_trap(int sig, siginfo_t *si, void *uc);
static bool on_fault(siginfo_t *si, void *uc);

/* The core's SIGSEGV handler asks on_fault() first, from the first watch
 * on (under lock); it stays, and says no while nothing is watched. */
static int fault_hook_ready(void)
{
	static bool done;

	if (done)
		return 0;
	if (mpk__fault_hook_register(on_fault))
		return -1;
	done = true;
	return 0;
}

/* The SIGTRAP handler; *made says this call installed it. */
static int trap_ready(bool *made)
{
	struct sigaction sa;

	if (trap_installed)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, MPK_SIGNAL); /* as the SIGSEGV handler: see fault.c */
	if (mpk_os_sigaction(SIGTRAP, &sa, &old_trap))
		return -1;
	trap_installed = true;
	*made = true;
	return 0;
}

/* Slots for the pages of [lo, hi) not yet watched, each with its
 * protection now (read and write, or EINVAL); none taken on failure. */
static int pages_take(uintptr_t lo, uintptr_t hi)
{
	size_t ps = mpk_os_page_size();
	int taken[WATCH_PAGES], n = 0, err = ENOSPC;

	for (uintptr_t pg = lo; pg < hi; pg += ps) {
		if (page_find(pg) >= 0)
			continue;
		int i = 0;
		while (i < WATCH_PAGES && (pages[i].page || pages[i].open))
			i++;
		int prot = i < WATCH_PAGES ? mpk_os_range_prot((void *)pg, ps) : -1;
		if (prot < 0 || (prot & (PROT_READ | PROT_WRITE)) != (PROT_READ | PROT_WRITE)) {
			if (i < WATCH_PAGES)
				err = prot < 0 ? errno : EINVAL;
			while (n)
				pages[taken[--n]].page = 0;
			errno = err;
			return -1;
		}
		pages[i].orig = prot;
		pages[i].mode = MODE_OFF;
		__atomic_store_n(&pages[i].page, pg, __ATOMIC_RELEASE);
		taken[n++] = i;
	}
	return 0;
}

/* A thread descriptor's size at most (glibc's struct pthread is about
 * 2.3 KiB, musl's a few hundred bytes). */
#define THREAD_DESC_MAX 3072

/* Every module's TLS block, each at its alignment: what lies below the
 * thread pointer at most (modules loaded later included). */
static int add_tls(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_TLS)
			*(size_t *)arg += (ph->p_memsz + ph->p_align - 1) & ~(ph->p_align - 1);
	}
	return 0;
}

/* Whether [lo, hi) shares a page with the calling thread's TLS or thread
 * descriptor.  musl's loader can put the first thread's there (in the
 * free tail of an object's last data page), and libc writes it with
 * signals blocked (pthread_create(), a thread's exit): a fault then ends
 * the process before any handler runs, so no watch can step over it. */
static bool holds_thread_data(uintptr_t lo, uintptr_t hi)
{
	uintptr_t tp = mpk_arch_thread_pointer();
	size_t tls = 0;

	if (!tp)
		return false;
	dl_iterate_phdr(add_tls, &tls);
	uintptr_t dlo = tp > tls ? tp - tls : 0, dhi = tp + THREAD_DESC_MAX;
	return dlo < hi && dhi > lo;
}

MPK_EXPORT int mpk_watch(void *addr, size_t len, unsigned flags, mpk_watch_fn fn, void *arg)
{
	size_t ps = mpk_os_page_size();
	uintptr_t a = (uintptr_t)addr;
	int id = -1;

	if (mpk__ensure_init())
		return -1;
	if (!addr || !len || len > UINTPTR_MAX - a - ps || !fn ||
	    !(flags & (MPK_WATCH_READ | MPK_WATCH_WRITE)) ||
	    (flags & ~(unsigned)(MPK_WATCH_READ | MPK_WATCH_WRITE | MPK_WATCH_VALUES))) {
		errno = EINVAL;
		return -1;
	}
	uintptr_t lo = a & ~(ps - 1), hi = (a + len + ps - 1) & ~(ps - 1);
	int mode = (flags & MPK_WATCH_READ) ? MODE_ALL : MODE_WRITES;
	bool made = false, trapped = false;
	unsigned long segv = 0;
	pthread_mutex_lock(&lock);
	mpk__core_lock();
	bool domain_memory = mpk__range_overlaps((void *)lo, hi - lo);
	mpk__core_unlock();
	int err = EINVAL;
	if (domain_memory)
		goto fail;
	if (holds_thread_data(lo, hi)) {
		err = EBUSY;
		goto fail;
	}
	/* Every check before any change: a watch that cannot be leaves no
	 * domain, key or handler behind (what the first watch makes). */
	for (id = 0; id < WATCH_MAX && watches[id].addr; id++)
		;
	if (id == WATCH_MAX) {
		err = ENOSPC;
		goto fail;
	}
	if (pages_take(lo, hi)) {
		err = errno;
		goto fail;
	}
	if (fault_hook_ready() || domain_ready(mode, &made) || mpk__fault_handler_ensure(&segv) ||
	    trap_ready(&trapped)) {
		err = errno;
		goto undo;
	}
	struct watch *w = &watches[id];
	w->len = len;
	w->flags = flags;
	w->fn = fn;
	w->arg = arg;
	__atomic_store_n(&w->addr, a, __ATOMIC_RELEASE);
	if (!pages_sync(lo, hi))
		goto out;
	err = errno;
	__atomic_store_n(&w->addr, 0, __ATOMIC_RELEASE);
undo:
	/* Back as it was: the pages (their slots freed), then what this
	 * call made, unless a page stays closed (then the domain's key is on
	 * it, and its faults need the handlers). */
	if (!pages_sync(lo, hi)) {
		if (trapped) {
			sigaction(SIGTRAP, &old_trap, NULL);
			trap_installed = false;
		}
		mpk__fault_handler_drop(segv);
		if (made)
			domain_drop(mode);
	}
fail:
	id = -1;
out:
	pthread_mutex_unlock(&lock);
	if (id < 0)
		errno = err;
	return id;
}

MPK_EXPORT int mpk_unwatch(int id)
{
	size_t ps = mpk_os_page_size();
	int rc = -1;

	pthread_mutex_lock(&lock);
	if (id < 0 || id >= WATCH_MAX || !watches[id].addr) {
		errno = EINVAL;
		goto out;
	}
	struct watch *w = &watches[id];
	uintptr_t a = w->addr, lo = a & ~(ps - 1), hi = (a + w->len + ps - 1) & ~(ps - 1);
	__atomic_store_n(&w->addr, 0, __ATOMIC_RELEASE);
	if (pages_sync(lo, hi)) {
		int err = errno;
		__atomic_store_n(&w->addr, a, __ATOMIC_RELEASE);
		pages_sync(lo, hi);
		errno = err;
		goto out;
	}
	rc = 0;
out:
	pthread_mutex_unlock(&lock);
	return rc;
}

/* ---- signal context ---- */

/* Whether the instruction at the fault also reads what it writes: x86 mostly
 * reports a read-modify-write's fault (add, inc, xchg... to memory) as a
 * write only.  Its bytes come through the kernel: an execute-only page
 * cannot be read directly. */
static bool reads_too(void *uc)
{
	uint8_t b[15];
	struct insn in;
	size_t n = mpk_arch_self_read(b, (uintptr_t)mpk_arch_frame_ip(uc), sizeof(b));

	return n && mpk__insn_decode(b, n, &in) && in.mem_rmw;
}

/* Park hit h of watch w (at s) until the instruction completes, with the
 * watched bytes as they are now.  false: no slot free, the caller
 * reports it now without values. */
static bool park(const struct mpk_watch_hit *h, uintptr_t s, const struct watch *w, bool rd, bool wr)
{
	int k = 0;

	for (pid_t free_ = 0; k < PENDING; k++, free_ = 0)
		if (__atomic_compare_exchange_n(&pending[k].owner, &free_, h->tid, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			break;
	if (k == PENDING)
		return false;
	struct pending *p = &pending[k];
	uintptr_t from = w->len <= MPK_WATCH_VALUE_MAX ? s : (uintptr_t)h->addr;
	size_t len = s + w->len - from;
	p->delivering = false;
	p->seq = __atomic_add_fetch(&parked_seq, 1, __ATOMIC_RELAXED);
	p->rd = rd;
	p->wr = wr;
	p->fn = w->fn;
	p->arg = w->arg;
	p->hit = *h;
	memcpy(p->frames, h->frames, (size_t)h->nframes * sizeof(void *));
	p->hit.frames = p->frames;
	p->hit.value_addr = (void *)from;
	p->hit.value_len = mpk_arch_self_read(p->old, from, len < MPK_WATCH_VALUE_MAX ? len : MPK_WATCH_VALUE_MAX);
	p->hit.old_value = p->old;
	p->hit.new_value = p->now;
	__atomic_add_fetch(&parked, 1, __ATOMIC_RELEASE);
	return true;
}

static void report(uintptr_t a, bool write, void *uc)
{
	void *frames[FRAMES];
	int n = -1, rmw = -1;

	for (int i = 0; i < WATCH_MAX; i++) {
		struct watch *w = &watches[i];
		uintptr_t s = __atomic_load_n(&w->addr, __ATOMIC_ACQUIRE);
		if (!s || a < s || a - s >= w->len)
			continue;
		/* The other half of a read-modify-write is not seen apart:
		 * the step below runs it with every right, and a CPU may
		 * report its fault as a write (most) or as the read that
		 * comes first (QEMU's, for an unlocked add). */
		bool other = (w->flags & (write ? MPK_WATCH_READ : MPK_WATCH_WRITE)) &&
			     (rmw < 0 ? (rmw = reads_too(uc)) : rmw);
		bool rd = (w->flags & MPK_WATCH_READ) && (!write || other);
		bool wr = (w->flags & MPK_WATCH_WRITE) && (write || other);
		if (!rd && !wr)
			continue;
		void *ip = mpk_arch_frame_ip(uc);
		if (n < 0) {
			/* From the faulting instruction outward: drop the
			 * handler's own frames when the unwinder shows it. */
			n = mpk__bt(frames, FRAMES);
			int k = 0;
			while (k < n && frames[k] != ip)
				k++;
			if (k == n)
				k = 0, frames[0] = ip;
			memmove(frames, frames + k, (size_t)(n - k) * sizeof(void *));
			n -= k;
		}
		struct mpk_watch_hit h = {
			.id = i, .addr = (void *)a, .offset = a - s, .write = false,
			.ip = ip, .tid = mpk_os_gettid(), .frames = frames, .nframes = n,
		};
		if ((w->flags & MPK_WATCH_VALUES) && park(&h, s, w, rd, wr))
			continue;
		if (rd) /* a read-modify-write reads first */
			w->fn(&h, w->arg);
		h.write = true;
		if (wr)
			w->fn(&h, w->arg);
	}
}

/* The rights the report and the callback run with on hw: the thread's,
 * and every watched page readable (for this thread only). */
static mpk_reg_t report_rights(mpk_reg_t reg)
{
	for (int m = 0; m < 2; m++)
		if (dom_key[m] > 0)
			reg &= ~(mpk_arch_key_mask(dom_key[m]) & ~mpk_arch_key_bits(dom_key[m], MPK_READ));
	return reg;
}

/* On hw, every watched key open to this handler: a handler starts with
 * the kernel's default PKRU, and this thread's TLS may lie in a watched
 * page (on_fault()).  Returns the rights it found. */
static mpk_reg_t handler_open(void)
{
	mpk_reg_t reg = mpk_arch_reg_read(), open = reg;

	for (int m = 0; m < 2; m++)
		if (dom_key[m] > 0)
			open &= ~mpk_arch_key_mask(dom_key[m]);
	if (open != reg)
		mpk_arch_reg_write(open);
	return reg;
}

/* The fault hook: a watched page's fault is reported and the access
 * stepped over with the page open (on_trap closes it again).  errno is
 * this hook's to keep (the core's handler reads it only after). */
static bool on_fault(siginfo_t *si, void *uc)
{
	size_t ps = mpk_os_page_size();
	uintptr_t a = (uintptr_t)si->si_addr;
	int key = -1, pi = page_find(a & ~(ps - 1));
	mpk_reg_t reg = 0;

	if (si->si_code == SEGV_PKUERR) {
		key = (int)si->si_pkey;
		if (key <= 0 || (key != dom_key[0] && key != dom_key[1]))
			return false;
	} else if (si->si_code != SEGV_ACCERR || pi < 0 || mpk_arch_fault_is_fetch(uc) ||
		   __atomic_load_n(&pages[pi].mode, __ATOMIC_ACQUIRE) == MODE_OFF) {
		return false;
	}
	if (hw() && !mpk_arch_frame_reg_get(uc, &reg))
		return false; /* cannot be: report it as a fault */
	/* The page is opened before the report, and before this thread's
	 * own TLS is written: musl's loader gives the free tail of an
	 * object's last data page, often the page of a watched global, to
	 * its malloc, which keeps there the loader's list of objects (the
	 * unwinder reads it) and the first thread's TLS (t_open). */
	if (key < 0) {
		__atomic_add_fetch(&pages[pi].open, 1, __ATOMIC_ACQ_REL);
		mpk_os_mprotect((void *)pages[pi].page, ps, pages[pi].orig);
	} else {
		handler_open();
	}
	int saved = errno;
	if (t_nopen == STEP_MAX) {
		if (key < 0)
			page_close(pi, ps);
		errno = saved;
		return false; /* cannot be: report it as a fault */
	}
	struct opened *o = &t_open[t_nopen++];
	o->key = key;
	o->page = pi;
	if (key >= 0)
		o->bits = reg & mpk_arch_key_mask(key);
	if (hw())
		mpk_arch_reg_write(report_rights(reg));
	report(a, mpk_arch_fault_is_write(uc), uc);
	if (hw())
		handler_open(); /* errno, below, may share a page with t_open */
	errno = saved;
	if (key >= 0)
		mpk_arch_frame_reg_set(uc, reg & ~mpk_arch_key_mask(key));
	mpk_arch_frame_step(uc, true);
	return true;
}

/* A trap that is not a watchpoint's step.  After the lockdown it ends
 * the process whatever handled SIGTRAP before: a handler could move a
 * thread stepped onto a WRPKRU past its check (docs/threat-model.md). */
static void chain_trap(int sig, siginfo_t *si, void *uc)
{
	bool locked = mpk_os_is_locked();

	if (!locked && (old_trap.sa_flags & SA_SIGINFO)) {
		old_trap.sa_sigaction(sig, si, uc);
	} else if (!locked && old_trap.sa_handler != SIG_DFL && old_trap.sa_handler != SIG_IGN) {
		old_trap.sa_handler(sig);
	} else if (locked || old_trap.sa_handler == SIG_DFL) {
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		mpk_os_sigaction(SIGTRAP, &dfl, NULL);
		raise(SIGTRAP);
	}
}

/* This thread's parked hits that wait for their values (delivering
 * ones excepted), as indices into idx, oldest first: how many. */
static int mine(pid_t tid, int *idx)
{
	int n = 0;

	for (int k = 0; k < PENDING; k++) {
		if (__atomic_load_n(&pending[k].owner, __ATOMIC_ACQUIRE) != tid || pending[k].delivering)
			continue;
		int i = n++;
		while (i && pending[idx[i - 1]].seq > pending[k].seq) {
			idx[i] = idx[i - 1];
			i--;
		}
		idx[i] = k;
	}
	return n;
}

/* The new bytes of this thread's parked hits (before the pages close:
 * on soft a read watch's page is readable only until then).  Their count
 * and indices, in idx. */
static int snapshot(int *idx)
{
	if (!__atomic_load_n(&parked, __ATOMIC_ACQUIRE))
		return 0;
	int n = mine(mpk_os_gettid(), idx);
	for (int i = 0; i < n; i++) {
		struct mpk_watch_hit *h = &pending[idx[i]].hit;
		size_t got = mpk_arch_self_read(pending[idx[i]].now, (uintptr_t)h->value_addr, h->value_len);
		if (got < h->value_len)
			h->value_len = got;
		pending[idx[i]].delivering = true;
	}
	return n;
}

/* The hits snapshot() took, in the order they came, with the rights a
 * report has at the fault (hw: a handler starts with the kernel's
 * default PKRU; sigreturn puts the frame's back). */
static void deliver(void *uc, const int *idx, int n)
{
	mpk_reg_t reg;

	if (!n)
		return;
	if (hw() && mpk_arch_frame_reg_get(uc, &reg))
		mpk_arch_reg_write(report_rights(reg));
	for (int i = 0; i < n; i++) {
		struct pending *p = &pending[idx[i]];
		if (p->rd) /* a read-modify-write reads first */
			p->fn(&p->hit, p->arg);
		p->hit.write = true;
		if (p->wr)
			p->fn(&p->hit, p->arg);
		__atomic_sub_fetch(&parked, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&p->owner, 0, __ATOMIC_RELEASE);
	}
}

static void on_trap(int sig, siginfo_t *si, void *uc)
{
	size_t ps = mpk_os_page_size();

	if (hw())
		handler_open();
	int saved = errno;

	if (!t_nopen) {
		chain_trap(sig, si, uc);
		errno = saved;
		return;
	}
	int idx[PENDING], n = snapshot(idx);
	/* Everything that may touch this thread's TLS (the callbacks,
	 * errno, the list of opened pages) runs while the pages are still
	 * open: it may lie in one of them (on_fault()). */
	mpk_arch_frame_step(uc, false);
	deliver(uc, idx, n);
	if (hw())
		handler_open(); /* deliver() left the watched keys read-only */
	struct opened op[STEP_MAX];
	int k = t_nopen;
	memcpy(op, t_open, (size_t)k * sizeof(*op));
	t_nopen = 0;
	errno = saved;
	while (k) {
		struct opened *o = &op[--k];
		if (o->key >= 0) {
			mpk_reg_t reg;
			if (mpk_arch_frame_reg_get(uc, &reg))
				mpk_arch_frame_reg_set(uc, (reg & ~mpk_arch_key_mask(o->key)) | o->bits);
			continue;
		}
		page_close(o->page, ps);
	}
}
