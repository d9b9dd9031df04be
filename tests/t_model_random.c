/*
 * A shadow model of rights, checked at random (issue 14).  40 domain slots
 * (more than the 4 keys this test allows on hw, so domains are evicted and
 * win keys back all the time), 3 worker threads, random steps run one at a
 * time by a chosen worker: create (sometimes MPK_DOMAIN_SHARED) and
 * destroy, set, enter/leave, mpk_set_all, probes of every kind of access,
 * a signal whose handler opens a domain, touches it and leaves, and a
 * thread parked inside a handler while the others go on (evictions,
 * revocations, set_all reaching it there): a SIGUSR1 handler, or the
 * program's own SIGSEGV handler, entered by a forbidden access (inside a
 * scope or not) and probing from there too (issue 20).  Half the domains a
 * thread creates are its own: only it changes rights to them, the others
 * hold none, so they are the ones an eviction may take while their owner
 * holds rights in its own code and none in its handler.
 *
 * The model: each thread's own rights to each domain (what mpk_get must
 * say), and what an access may do: on hw with a key, the thread's own
 * rights; without a key (soft backend, or a hw domain evicted), the union
 * of every thread's rights and the soft base (docs/guide.md, "hw and soft:
 * what differs"; the base is what mpk_set_all or a shared create left on a
 * keyless domain, and counts until it gets a key).  Every allowed access
 * must succeed (and read what the shadow page says); every forbidden one
 * must fault at its address, with SEGV_PKUERR and the domain's key when it
 * has one, SEGV_ACCERR when it has none.  Probes run in the thread itself:
 * a SIGSEGV handler records the fault and skips the 2-byte access.
 *
 * MPKIT_MODEL_SEED and MPKIT_MODEL_STEPS choose another run.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include "t_probe.h"

#define ND 40
#define NT 3       /* workers; the main thread only directs (index NT) */
#define PAGE 4096
#define KEYS 4

static int hw;
static struct dom {
	mpk_domain *d;
	unsigned char *p;
	unsigned char shadow[PAGE];
	int own[NT + 1]; /* each thread's rights */
	int base;        /* soft base, while keyless */
	int owner;       /* the thread that alone changes its rights, or -1 */
} dom[ND];
static unsigned long long stats_steps, stats_pkuerr, stats_accerr, stats_allowed, stats_parked,
	stats_fault_parked;
static int parked = -1; /* the thread waiting in a handler, if any */
static unsigned char *guard; /* no access, no domain: a fault anyone can make */

static int max_rights(int a, int b)
{
	return a > b ? a : b; /* NONE 0 < READ 1 < RW 3 */
}

/* What thread t may do to domain i now. */
static int allowed(int i, int t)
{
	struct dom *m = &dom[i];
	if (hw && mpk_domain_key(m->d) >= 0)
		return m->own[t];
	int u = m->base;
	for (int k = 0; k <= NT; k++)
		u = max_rights(u, m->own[k]);
	return u;
}

/* A keyed domain's soft base is gone (soft.c: mpk__soft_keyed). */
static void note_keys(void)
{
	for (int i = 0; i < ND; i++)
		if (dom[i].d && hw && mpk_domain_key(dom[i].d) >= 0)
			dom[i].base = MPK_NONE;
}

/* ---- probes ---- */

/* The next fault parks in the handler (do_fault_park). */
static __thread volatile int park_next;

static void in_segv_handler(void);

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	if (!t_probe_caught(si, uc)) {
		static const char msg[] = "t_model_random: unexpected SIGSEGV\n";
		if (write(2, msg, sizeof(msg) - 1) < 0)
			_exit(2);
		_exit(1);
	}
	if (park_next) {
		park_next = 0;
		in_segv_handler();
	}
}

static unsigned rnd(unsigned long long *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)(*s >> 33);
}

static unsigned long long seed, seed0;

/* Thread t reads and writes domain i at a random offset, as the model
 * says (rights: what it may do now); what: for the failure message. */
static void probe_as(int i, int t, int rights, const char *what)
{
	struct dom *m = &dom[i];
	unsigned off = rnd(&seed) % PAGE;
	unsigned char v = (unsigned char)rnd(&seed), got;
	int key = hw ? mpk_domain_key(m->d) : -1;

	for (int w = 0; w < 2; w++) {
		bool may = w ? rights == MPK_RW : rights != MPK_NONE;
		bool f = t_touch(m->p + off, w, v, &got);
		if (may) {
			stats_allowed++;
			if (f)
				t_fail("step %llu %s: thread %d domain %d %s faulted (code %d), rights %d",
				       stats_steps, what, t, i, w ? "write" : "read", t_pr.code, rights);
			else if (w)
				m->shadow[off] = v;
			else if (got != m->shadow[off])
				t_fail("step %llu %s: domain %d offset %u reads %d, shadow %d",
				       stats_steps, what, i, off, got, m->shadow[off]);
			continue;
		}
		if (!f) {
			t_fail("step %llu %s: thread %d domain %d (key %d) %s succeeded, rights %d",
			       stats_steps, what, t, i, key, w ? "write" : "read", rights);
			if (w)
				m->shadow[off] = v;
			continue;
		}
		if (t_pr.addr != m->p + off)
			t_fail("step %llu %s: fault at %p, not %p", stats_steps, what, t_pr.addr,
			       (void *)(m->p + off));
		if (key >= 0) {
			stats_pkuerr++;
			if (t_pr.code != SEGV_PKUERR || t_pr.pkey != key)
				t_fail("step %llu %s: domain %d key %d: code %d pkey %d", stats_steps,
				       what, i, key, t_pr.code, t_pr.pkey);
		} else {
			stats_accerr++;
			if (t_pr.code != SEGV_ACCERR)
				t_fail("step %llu %s: keyless domain %d: code %d", stats_steps, what, i,
				       t_pr.code);
		}
	}
}

/* ---- workers: run one step each, when told ---- */

static pthread_mutex_t mx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct worker {
	pthread_t th;
	void (*fn)(int t, int i, int r);
	int i, r;
	bool busy, quit;
} w[NT];

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;

	pthread_mutex_lock(&mx);
	for (;;) {
		while (!w[t].busy && !w[t].quit)
			pthread_cond_wait(&cv, &mx);
		if (w[t].quit)
			break;
		pthread_mutex_unlock(&mx);
		w[t].fn(t, w[t].i, w[t].r);
		pthread_mutex_lock(&mx);
		w[t].busy = false;
		pthread_cond_broadcast(&cv);
	}
	pthread_mutex_unlock(&mx);
	return NULL;
}

static void post(int t, void (*fn)(int, int, int), int i, int r)
{
	pthread_mutex_lock(&mx);
	w[t].fn = fn;
	w[t].i = i;
	w[t].r = r;
	w[t].busy = true;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mx);
}

static void wait_done(int t)
{
	pthread_mutex_lock(&mx);
	while (w[t].busy)
		pthread_cond_wait(&cv, &mx);
	pthread_mutex_unlock(&mx);
}

static void run(int t, void (*fn)(int, int, int), int i, int r)
{
	post(t, fn, i, r);
	wait_done(t);
}

/* ---- steps ---- */

static void do_create(int t, int i, int r)
{
	char name[16];
	bool shared = r & 4;
	r &= 3;
	snprintf(name, sizeof(name), "m%d", i);
	struct dom *m = &dom[i];
	m->d = mpk_domain_create(name, r, shared ? MPK_DOMAIN_SHARED : 0);
	if (!m->d) {
		t_fail("create: errno %d", errno);
		return;
	}
	m->p = mpk_alloc(m->d, PAGE);
	if (!m->p)
		t_fail("alloc: errno %d", errno);
	memset(m->shadow, 0, PAGE);
	for (int k = 0; k <= NT; k++)
		m->own[k] = shared || k == t ? r : MPK_NONE;
	m->base = shared ? r : MPK_NONE;
	m->owner = -1;
}

/* A domain of t's own (see the top). */
static void do_create_own(int t, int i, int r)
{
	do_create(t, i, r);
	dom[i].owner = t;
}

static void do_destroy(int t, int i, int r)
{
	(void)t, (void)r;
	if (mpk_domain_destroy(dom[i].d))
		t_fail("destroy: errno %d", errno);
	dom[i].d = NULL;
}

static void do_set(int t, int i, int r)
{
	if (mpk_set(dom[i].d, r))
		t_fail("set: errno %d", errno);
	dom[i].own[t] = r;
}

static void check_get(int t, int i, const char *what)
{
	int g = mpk_get(dom[i].d);
	if (g != dom[i].own[t])
		t_fail("step %llu %s: thread %d domain %d: mpk_get %d, model %d", stats_steps, what,
		       t, i, g, dom[i].own[t]);
}

static void do_probe(int t, int i, int r)
{
	(void)r;
	check_get(t, i, "probe");
	probe_as(i, t, allowed(i, t), "probe");
}

static void do_enter(int t, int i, int r)
{
	int old = dom[i].own[t];
	mpk_scope s = mpk_enter(dom[i].d, r);
	if (s.saved != old)
		t_fail("step %llu enter: saved %d, model %d", stats_steps, s.saved, old);
	dom[i].own[t] = r;
	note_keys(); /* entering may have won a key */
	probe_as(i, t, allowed(i, t), "enter");
	if (mpk_leave(&s))
		t_fail("leave: errno %d", errno);
	dom[i].own[t] = old;
	check_get(t, i, "leave");
}

static void do_set_all(int t, int i, int r)
{
	(void)t;
	bool keyless = !hw || mpk_domain_key(dom[i].d) < 0;
	if (mpk_set_all(dom[i].d, r))
		t_fail("set_all: errno %d", errno);
	for (int k = 0; k <= NT; k++)
		dom[i].own[k] = r;
	if (keyless)
		dom[i].base = r;
}

/* In a handler: open, touch, leave.  On hw a handler starts with every key
 * closed; a keyless domain's rights are the thread's (TLS), as outside. */
static int sig_i, sig_r, sig_thr;
/* The parked handler says "in" on park_in and waits for "go" on park_go. */
static int park_in[2], park_go[2];

/* Thread t, in a handler: open domain i with r, touch it, leave; the
 * handler's rights to i after (the rights on entry). */
static int open_in_handler(int t, int i, int r, const char *what)
{
	struct dom *m = &dom[i];
	int outer = m->own[t];
	bool keyed = hw && mpk_domain_key(m->d) >= 0;
	int want = keyed ? MPK_NONE : outer;
	int g = mpk_get(m->d);
	if (g != want)
		t_fail("step %llu %s: thread %d domain %d: mpk_get %d on entry, want %d",
		       stats_steps, what, t, i, g, want);
	mpk_scope s = mpk_enter(m->d, r);
	m->own[t] = r; /* for the model, while in here */
	note_keys();
	probe_as(i, t, allowed(i, t), what);
	CHECK(mpk_leave(&s) == 0);
	m->own[t] = outer;
	return want;
}

static void in_handler(void)
{
	open_in_handler(sig_thr, sig_i, sig_r, "handler");
}

static void on_usr1(int sig)
{
	(void)sig;
	int saved = errno;
	if (sig_i >= 0)
		in_handler();
	else { /* parked: wait for the word */
		char c;
		if (write(park_in[1], "p", 1) != 1 || read(park_go[0], &c, 1) != 1)
			_exit(3);
	}
	errno = saved;
}

static void do_signal(int t, int i, int r)
{
	sig_thr = t;
	sig_i = i;
	sig_r = r;
	raise(SIGUSR1); /* to this thread */
	check_get(t, i, "after handler");
}

/* In the SIGSEGV handler a forbidden access entered (the handler's rights
 * are the kernel's: a keyed domain is closed): probe from here, then wait
 * for the word while the others go on. */
static int fault_i = -1; /* not destroyed meanwhile */

static void in_segv_handler(void)
{
	int t = sig_thr, i = fault_i;
	struct dom *m = &dom[i];
	int saved_code = t_pr.code, saved_pkey = t_pr.pkey;
	void *saved_addr = t_pr.addr;
	int mine = open_in_handler(t, i, rnd(&seed) % 2 ? MPK_RW : MPK_READ, "SIGSEGV handler");
	bool keyed = hw && mpk_domain_key(m->d) >= 0;
	char c;

	probe_as(i, t, keyed ? mine : allowed(i, t), "SIGSEGV handler, left");
	t_pr.faulted = 1;
	t_pr.code = saved_code;
	t_pr.pkey = saved_pkey;
	t_pr.addr = saved_addr;
	if (write(park_in[1], "f", 1) != 1 || read(park_go[0], &c, 1) != 1)
		_exit(3);
}

/* Thread t, in a scope of rights r to domain i (r < 0: none), makes a
 * forbidden access (a write to i if it may not write there, else to the
 * guard page); its SIGSEGV handler parks.  Once back: the fault as the
 * model says, every right the same, i's accesses as allowed. */
static void do_fault_park(int t, int i, int r)
{
	struct dom *m = &dom[i];
	int old = m->own[t];
	mpk_scope s = { 0 };

	sig_thr = t;
	if (r >= 0) {
		s = mpk_enter(m->d, r);
		if (s.saved != old)
			t_fail("step %llu fault park: saved %d, model %d", stats_steps, s.saved, old);
		m->own[t] = r;
		note_keys();
	}
	bool dom_write = allowed(i, t) != MPK_RW;
	unsigned char *p = dom_write ? m->p + rnd(&seed) % PAGE : guard;
	int key = dom_write && hw ? mpk_domain_key(m->d) : -1;
	park_next = 1;
	bool f = t_touch(p, true, 0x77, NULL);
	park_next = 0;
	if (!f)
		t_fail("step %llu fault park: thread %d domain %d: the write succeeded", stats_steps,
		       t, i);
	else if (t_pr.addr != p || t_pr.code != (key >= 0 ? SEGV_PKUERR : SEGV_ACCERR) ||
		 (key >= 0 && t_pr.pkey != key))
		t_fail("step %llu fault park: fault at %p code %d pkey %d, want %p code %d key %d",
		       stats_steps, t_pr.addr, t_pr.code, t_pr.pkey, (void *)p,
		       key >= 0 ? SEGV_PKUERR : SEGV_ACCERR, key);
	for (int k = 0; k < ND; k++)
		if (dom[k].d)
			check_get(t, k, "after a fault handler");
	probe_as(i, t, allowed(i, t), "after a fault handler");
	if (r >= 0) {
		if (mpk_leave(&s))
			t_fail("fault park leave: errno %d", errno);
		m->own[t] = old;
		check_get(t, i, "fault park leave");
	}
}

static void do_park(int t, int i, int r)
{
	(void)i, (void)r;
	sig_thr = t;
	sig_i = -1;
	raise(SIGUSR1); /* returns when released */
	for (int k = 0; k < ND; k++)
		if (dom[k].d)
			check_get(t, k, "after parking");
}

/* ---- the driver ---- */

static int live_domain(void)
{
	int n = 0, pick[ND];
	for (int i = 0; i < ND; i++)
		if (dom[i].d)
			pick[n++] = i;
	return n ? pick[rnd(&seed) % (unsigned)n] : -1;
}

static int random_rights(void)
{
	static const int r[3] = { MPK_NONE, MPK_READ, MPK_RW };
	return r[rnd(&seed) % 3];
}

static void step(int t, bool may_park);

/* t runs fn in a handler and waits there (saying so on park_in) while
 * 1 to 4 steps of the others run. */
static void park_while(int t, void (*fn)(int, int, int), int i, int r)
{
	char c;

	parked = t;
	post(t, fn, i, r);
	REQUIRE(read(park_in[0], &c, 1) == 1);
	int n = 1 + (int)(rnd(&seed) % 4);
	for (int k = 0; k < n; k++) {
		int o = (t + 1 + (int)(rnd(&seed) % (NT - 1))) % NT;
		stats_steps++;
		step(o, false);
		note_keys();
	}
	REQUIRE(write(park_go[1], "g", 1) == 1);
	wait_done(t);
	parked = -1;
}

/* One step by thread t (never one that is parked: excluded). */
static void step(int t, bool may_park)
{
	unsigned op = rnd(&seed) % 100;
	int i = live_domain();

	/* Only its owner changes rights to an owned domain (set_all would
	 * give them to all: the owner sets instead); with the owner parked,
	 * t probes it. */
	if (i >= 0 && op >= 8 && op < 96 && !(op >= 30 && op < 50) && dom[i].owner >= 0) {
		if (dom[i].owner == parked)
			op = 40;
		else
			t = dom[i].owner, op = op >= 65 && op < 72 ? 20 : op;
	}
	if (i < 0 || op < 8) {
		int f = (int)(rnd(&seed) % ND);
		if (!dom[f].d) {
			int r = random_rights();
			if (rnd(&seed) % 2)
				run(t, do_create_own, f, r);
			else
				run(t, do_create, f, r | (rnd(&seed) % 8 == 0 ? 4 : 0));
		} else if (i >= 0 && (f & 1) && f != fault_i) {
			run(t, do_destroy, f, 0);
		}
	} else if (op < 30) {
		run(t, do_set, i, random_rights());
	} else if (op < 50) {
		run(t, do_probe, i, 0);
	} else if (op < 65) {
		run(t, do_enter, i, random_rights());
	} else if (op < 72) {
		run(t, do_set_all, i, random_rights());
	} else if (op < 85) {
		run(t, do_signal, i, random_rights() == MPK_NONE ? MPK_READ : MPK_RW);
	} else if (op < 90 && may_park) {
		/* t waits in a handler; the others go on meanwhile. */
		stats_parked++;
		park_while(t, do_park, 0, 0);
	} else if (op < 96 && may_park) {
		/* t waits in its SIGSEGV handler, in a scope or not. */
		int r = rnd(&seed) % 2 ? random_rights() : -1;
		stats_fault_parked++;
		fault_i = i;
		park_while(t, do_fault_park, i, r);
		fault_i = -1;
	} else {
		run(t, do_probe, i, 0);
	}
}

int main(void)
{
	struct sigaction sa;
	const char *e;

#ifdef __SANITIZE_THREAD__
	/* ThreadSanitizer defers asynchronous signals and wraps handlers: a
	 * handler that blocks, or one that skips the faulting instruction,
	 * is not what runs. */
	t_skip("signal handlers under ThreadSanitizer are not the program's");
#endif
	hw = t_backend() == MPK_BACKEND_HW;
	/* Short by default: a hw step in the emulated VM costs a few
	 * broadcasts, tens of milliseconds (500: seed 14 parks in the SIGSEGV
	 * handler often enough to have caught issue 20's eviction). */
	unsigned long long steps = hw ? 500 : 5000;
	seed = 14;
	if ((e = getenv("MPKIT_MODEL_SEED")))
		seed = strtoull(e, NULL, 0);
	if ((e = getenv("MPKIT_MODEL_STEPS")))
		steps = strtoull(e, NULL, 0);
	seed0 = seed;
	printf("t_model_random: seed %llu, %llu steps, %d domain slots, %d threads, %s\n", seed,
	       steps, ND, NT, hw ? "hw, 4 keys" : "soft");
	fflush(stdout);
	if (hw)
		REQUIRE(mpk_set_key_budget(KEYS) == 0);

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	REQUIRE(sigaction(SIGSEGV, &sa, NULL) == 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
	REQUIRE(pipe(park_in) == 0 && pipe(park_go) == 0);
	guard = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(guard != MAP_FAILED);

	for (int t = 0; t < NT; t++)
		REQUIRE(pthread_create(&w[t].th, NULL, worker, (void *)(intptr_t)t) == 0);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (stats_steps = 0; stats_steps < steps && t_failures < 20; stats_steps++) {
		step((int)(rnd(&seed) % NT), true);
		note_keys();
		if (stats_steps % 10000 == 9999) {
			printf("t_model_random: %llu steps\n", stats_steps + 1);
			fflush(stdout);
		}
	}
	/* Every live domain, by every thread, once more. */
	for (int i = 0; i < ND; i++)
		for (int t = 0; dom[i].d && t < NT; t++)
			run(t, do_probe, i, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_mutex_lock(&mx);
	for (int t = 0; t < NT; t++)
		w[t].quit = true;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mx);
	for (int t = 0; t < NT; t++)
		REQUIRE(pthread_join(w[t].th, NULL) == 0);
	struct mpk_stats st;
	REQUIRE(mpk_stats_get(&st) == 0);
	printf("t_model_random: %llu steps in %.1f s: %llu allowed accesses, %llu faults "
	       "(%llu SEGV_PKUERR, %llu SEGV_ACCERR), %llu parked in a handler, %llu in the "
	       "SIGSEGV handler, %llu broadcasts\n",
	       stats_steps, (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
	       stats_allowed, stats_pkuerr + stats_accerr, stats_pkuerr, stats_accerr, stats_parked,
	       stats_fault_parked, (unsigned long long)st.broadcasts);
	if (t_failures)
		printf("t_model_random: FAILED with seed %llu\n", seed0);
	return t_done();
}
