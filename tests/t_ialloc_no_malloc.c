/*
 * mpkit never calls the process's allocator once initialised: mpkit may be
 * that allocator (its heap behind LD_PRELOAD), and it allocates under its
 * locks.  This program is the allocator here: malloc, free, calloc,
 * realloc and the aligned ones are its own, forwarding to glibc's, and
 * each call whose stack holds a frame of libmpkit.so (this test links the
 * shared library, to tell its code by its mapping) is counted, directly or
 * through libc (stdio, opendir, qsort...).  It first proves it sees such a
 * call (a misuse handler mpkit calls, which allocates), then drives the
 * API broadly: domains past the quarantine, regions, rights saved and
 * restored, heaps with threads exiting while others allocate, vaults,
 * watchpoints, mpk_thread_create, mpk_set_all, the audit, fork in a
 * threaded program, a fault report and the lockdown (in children, whose
 * counts come back as their exit status).  Not under a sanitizer, whose
 * runtime owns malloc.  musl's C library has no unwind tables: a stack
 * ends at its frames, so there only mpkit's direct calls are seen.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"
#include "unwind.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
int main(void)
{
	t_skip("a sanitizer's runtime owns malloc; this test replaces it");
}
#else

/* The C library's allocator, under this program's. */
#ifdef __GLIBC__
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void __libc_free(void *p);
#define LIBC(fn) __libc_##fn
#define LIBC_ALIGNED(align, n) __libc_memalign(align, n)
#else
/* musl has no __libc_ entry points: its own functions, found after this
 * program's (its loader allocates for itself with a malloc of its own,
 * so looking them up allocates nothing). */
static void *libc_fn(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);
	if (!f)
		abort();
	return f;
}
#define LIBC(fn)                                                            \
	({                                                                  \
		static __typeof__(&fn) f_;                                  \
		if (!__atomic_load_n(&f_, __ATOMIC_ACQUIRE))                 \
			__atomic_store_n(&f_, (__typeof__(&fn))libc_fn(#fn), \
					 __ATOMIC_RELEASE);                  \
		f_;                                                         \
	})
/* Its memalign() calls aligned_alloc(), which would be this program's. */
#define LIBC_ALIGNED(align, n) LIBC(aligned_alloc)(align, n)
#endif

/* Objects are built with hidden visibility: these must be what every
 * library calls. */
#define EXPORT __attribute__((visibility("default")))

enum { FRAMES = 48 };

static uintptr_t lib_lo = UINTPTR_MAX, lib_hi; /* libmpkit.so's code */
static uintptr_t pc_lo, pc_hi;                /* pthread_create()'s */
static int armed, bad;                        /* atomic */
static void *first[FRAMES];                   /* the first bad call's stack */
static int nfirst;
static __thread int busy;

/* Count the call if a frame above it is mpkit's. */
static void check(void)
{
	void *f[FRAMES];

	if (!__atomic_load_n(&armed, __ATOMIC_ACQUIRE) || busy)
		return;
	busy = 1;
	int n = mpk__bt(f, FRAMES);
	for (int i = 1; i < n; i++) {
		/* mpk_thread_create() makes a thread as the program would:
		 * pthread_create() allocates its TLS. */
		if ((uintptr_t)f[i] >= pc_lo && (uintptr_t)f[i] < pc_hi)
			break;
		if ((uintptr_t)f[i] >= lib_lo && (uintptr_t)f[i] < lib_hi) {
			if (__atomic_fetch_add(&bad, 1, __ATOMIC_ACQ_REL) == 0) {
				memcpy(first, f, (size_t)n * sizeof(*f));
				nfirst = n;
			}
			break;
		}
	}
	busy = 0;
}

EXPORT void *malloc(size_t n)
{
	check();
	return LIBC(malloc)(n);
}

EXPORT void free(void *p)
{
	check();
	LIBC(free)(p);
}

EXPORT void *calloc(size_t n, size_t size)
{
	check();
	return LIBC(calloc)(n, size);
}

EXPORT void *realloc(void *p, size_t n)
{
	check();
	return LIBC(realloc)(p, n);
}

EXPORT void *memalign(size_t align, size_t n)
{
	check();
	return LIBC_ALIGNED(align, n);
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	check();
	return LIBC_ALIGNED(align, n);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	bool bad_align = align < sizeof(void *) || (align & (align - 1));
	void *p = bad_align ? (check(), NULL) : memalign(align, n);

	if (p)
		*out = p;
	return bad_align ? EINVAL : p ? 0 : ENOMEM;
}

static int find_lib(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size, (void)arg;
	if (!strstr(info->dlpi_name, "libmpkit.so"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (lo < lib_lo)
			lib_lo = lo;
		if (hi > lib_hi)
			lib_hi = hi;
	}
	return 1;
}

static void arm(void)
{
	__atomic_store_n(&bad, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&armed, 1, __ATOMIC_RELEASE);
}

/* The calls counted since arm(), the first one's stack shown. */
static int disarm(const char *what)
{
	__atomic_store_n(&armed, 0, __ATOMIC_RELEASE);
	int n = __atomic_load_n(&bad, __ATOMIC_ACQUIRE);
	if (n) {
		fprintf(stderr, "%s: %d allocator call(s) from inside mpkit; the first:\n", what, n);
		mpk__bt_names_fd(first, nfirst, STDERR_FILENO);
	}
	return n;
}

/* ---- the proof that the hook sees mpkit's calls ---- */

static void allocating_handler(const struct mpk_misuse *m, void *arg)
{
	(void)m, (void)arg;
	void *volatile p = malloc(64); /* volatile: clang drops a bare pair */
	free(p);
}

/* ---- heaps: threads exit while others allocate ---- */

enum { WORKERS = 4, ROUNDS = 3, BLOCKS = 1000 };
static mpk_domain *hd;
static mpk_heap *heap;

static void *churn(void *arg)
{
	static const size_t sizes[] = { 24, 200, 1500, 3000, 9000, 40000, 70000, 300000 };
	void **b = LIBC(calloc)(BLOCKS, sizeof(*b));
	unsigned x = (unsigned)(uintptr_t)arg * 2654435761u + 7;

	REQUIRE(b && mpk_set(hd, MPK_RW) == 0);
	for (int i = 0; i < BLOCKS; i++) {
		x = x * 1103515245u + 12345u;
		REQUIRE(b[i] = mpk_heap_malloc(heap, sizes[(x >> 12) % 8] >> ((x >> 20) % 3)));
		memset(b[i], 1, 8);
	}
	/* Most go back now, the rest with the thread's cache at its exit. */
	for (int i = 0; i < BLOCKS; i++)
		if (i % 7 || (x >> 3) % 2)
			REQUIRE(mpk_heap_free(heap, b[i]) == 0);
		else
			REQUIRE(b[i] = mpk_heap_realloc(heap, b[i], 100));
	for (int i = 0; i < BLOCKS; i += 7)
		if (!((x >> 3) % 2))
			REQUIRE(mpk_heap_free(heap, b[i]) == 0);
	LIBC(free)(b);
	return NULL;
}

static void heaps(void)
{
	pthread_t t[WORKERS];

	REQUIRE(hd = mpk_domain_create("ialloc-heap", MPK_RW, 0));
	REQUIRE(heap = mpk_heap_create(hd, 0));
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < WORKERS; i++)
			REQUIRE(pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)(r * WORKERS + i)) == 0);
		/* Threads come and go: half of them before the others end. */
		for (int i = 0; i < WORKERS; i += 2)
			REQUIRE(pthread_join(t[i], NULL) == 0);
		pthread_t late;
		REQUIRE(mpk_thread_create(&late, NULL, churn, (void *)(uintptr_t)(100 + r)) == 0);
		REQUIRE(pthread_join(late, NULL) == 0);
		for (int i = 1; i < WORKERS; i += 2)
			REQUIRE(pthread_join(t[i], NULL) == 0);
	}
	/* Blocks with guard pages and a region each, and a vault. */
	mpk_heap *g;
	REQUIRE(g = mpk_heap_create(hd, MPK_HEAP_GUARDED));
	void *gb[40];
	for (int i = 0; i < 40; i++)
		REQUIRE(gb[i] = mpk_heap_malloc(g, 100u << (i % 12)));
	for (int i = 0; i < 40; i++)
		REQUIRE(mpk_heap_free(g, gb[i]) == 0);
	REQUIRE(mpk_heap_destroy(g) == 0);
	mpk_domain *vd;
	REQUIRE(vd = mpk_domain_create("ialloc-vault", MPK_NONE, 0));
	void *s[64];
	for (int i = 0; i < 64; i++)
		REQUIRE(s[i] = mpk_secret_alloc(vd, 16u << (i % 9)));
	for (int i = 0; i < 64; i++)
		REQUIRE(mpk_secret_free(s[i]) == 0);
}

/* ---- domains, regions, rights ---- */

static void domains_and_regions(void)
{
	enum { N = 300 };
	static mpk_domain *d[N];
	char name[32];

	/* Past the slot table's growth and the destroyed domains' quarantine. */
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < N; i++) {
			snprintf(name, sizeof(name), "ia-%d-%d", round, i);
			REQUIRE(d[i] = mpk_domain_create(name, i % 3 ? MPK_NONE : MPK_RW, 0));
		}
		mpk_rights_t saved;
		REQUIRE(mpk_rights_save(&saved) == 0);
		for (int i = 0; i < N; i++)
			REQUIRE(mpk_set(d[i], i % 2 ? MPK_READ : MPK_RW) == 0);
		REQUIRE(mpk_rights_restore(&saved) == 0);
		REQUIRE(mpk_rights_dispose(&saved) == 0);
		for (int i = 0; i < N; i++)
			REQUIRE(mpk_domain_destroy(d[i]) == 0);
	}
	/* Regions of many sizes: region slots, window tables, free units. */
	mpk_domain *r;
	REQUIRE(r = mpk_domain_create("ia-regions", MPK_RW, 0));
	static void *p[600];
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 600; i++)
			REQUIRE(p[i] = mpk_alloc(r, page * (1 + (size_t)(i * 7 % 1500))));
		for (int i = 0; i < 600; i += 2)
			REQUIRE(mpk_free(r, p[i]) == 0);
		for (int i = 1; i < 600; i += 2)
			REQUIRE(mpk_free(r, p[i]) == 0);
	}
	/* Adopted memory of the program's. */
	void *own = mmap(NULL, 64 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(own != MAP_FAILED);
	for (int i = 0; i < 32; i++)
		REQUIRE(mpk_adopt(r, (char *)own + 2 * (size_t)i * page, page) == 0);
	REQUIRE(mpk_set_all(r, MPK_READ) == 0);
	REQUIRE(mpk_set_all(r, MPK_RW) == 0);
	struct mpk_audit_entry e[16];
	REQUIRE(mpk_audit(e, 16) >= 0);
	for (int i = 0; i < 32; i++)
		REQUIRE(mpk_free(r, (char *)own + 2 * (size_t)i * page) == 0);
	REQUIRE(mpk_domain_destroy(r) == 0);
}

/* ---- watchpoints ---- */

static int hits; /* atomic */

static void on_hit(const struct mpk_watch_hit *hit, void *arg)
{
	(void)hit, (void)arg;
	__atomic_add_fetch(&hits, 1, __ATOMIC_RELAXED);
}

static void watch(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	volatile char *w = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(w != MAP_FAILED);
	int id = mpk_watch((void *)w, 8, MPK_WATCH_WRITE, on_hit, NULL);
	REQUIRE(id >= 0);
	w[0] = 1;
	w[1] = 2;
	REQUIRE(mpk_unwatch(id) == 0);
	CHECK(__atomic_load_n(&hits, __ATOMIC_RELAXED) == 2);
}

/* ---- children: fork in a threaded program, a fault report, lockdown ---- */

static mpk_domain *closed;
static char *secret;

static void child_exit(int sig)
{
	(void)sig;
	_exit(disarm("child") ? 1 : 42);
}

/* Reads a closed domain: the report, then abort(), whose handler says
 * whether any allocation came from mpkit meanwhile. */
static void fault_child(void *arg)
{
	(void)arg;
	signal(SIGABRT, child_exit);
	REQUIRE(mpk_fault_handler_install(NULL, NULL) == 0);
	arm();
	t_touch_read(secret);
	_exit(3);
}

static int stop; /* atomic */

static void *spin_heap(void *arg)
{
	(void)arg;
	REQUIRE(mpk_set(hd, MPK_RW) == 0);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		void *q = mpk_heap_malloc(heap, 5000);
		REQUIRE(q);
		REQUIRE(mpk_heap_free(heap, q) == 0);
	}
	return NULL;
}

static void children(void)
{
	pthread_t t[2];

	REQUIRE(closed = mpk_domain_create("ia-closed", MPK_RW, 0));
	REQUIRE(secret = mpk_alloc(closed, 4096));
	REQUIRE(mpk_set(closed, MPK_NONE) == 0);

	struct t_child c = t_child(fault_child, NULL, T_CHILD_STDERR);
	CHECK(c.exit_code == 42);
	CHECK_HAS(c.err, "ia-closed");
	if (c.exit_code != 42)
		fprintf(stderr, "fault child: %s\n", c.err ? c.err : "");
	t_child_free(&c);

	/* fork() while threads are inside heap calls; the child allocates. */
	for (int i = 0; i < 2; i++)
		REQUIRE(pthread_create(&t[i], NULL, spin_heap, NULL) == 0);
	for (int k = 0; k < 10; k++) {
		arm();
		pid_t pid = fork();
		REQUIRE(pid >= 0);
		if (!pid) {
			void *q = mpk_heap_malloc(heap, 300);
			mpk_domain *cd = mpk_domain_create("ia-child", MPK_RW, 0);
			void *r = cd ? mpk_alloc(cd, 8192) : NULL;
			_exit(!q || !r || mpk_heap_free(heap, q) || mpk_free(cd, r) ? 2
			      : disarm("forked child") ? 1 : 0);
		}
		int st;
		REQUIRE(waitpid(pid, &st, 0) == pid);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		CHECK(disarm("parent around fork") == 0);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		REQUIRE(pthread_join(t[i], NULL) == 0);

	/* The lockdown reads /proc under mpkit's locks; then memory comes
	 * after it (a new window's filter). */
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (!pid) {
		arm();
		int rc = mpk_lockdown(MPK_LOCK_ERRNO | MPK_LOCK_PROC_MEM);
		if (rc && errno == ENOTSUP)
			rc = mpk_lockdown(MPK_LOCK_ERRNO);
		mpk_domain *ld = mpk_domain_create("ia-after-lockdown", MPK_RW, 0);
		void *big = ld ? mpk_alloc(ld, (size_t)600 << 20) : NULL;
		_exit(disarm("lockdown child") ? 1 : rc ? 77 : !big ? 2 : 0);
	}
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 77));
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		printf("note: no lockdown here (its part was not run)\n");
}

int main(void)
{
	REQUIRE(dl_iterate_phdr(find_lib, NULL) == 1 && lib_lo < lib_hi);
#ifdef __GLIBC__
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	REQUIRE(dladdr1((void *)pthread_create, &info, (void **)&sym, RTLD_DL_SYMENT) && sym);
	pc_lo = (uintptr_t)info.dli_saddr;
	pc_hi = pc_lo + sym->st_size;
#endif /* musl's pthread_create() maps its thread's memory: no exception */
	t_backend();
	REQUIRE(mpk_init() == 0);

	/* The hook sees a call mpkit makes (here through a callback). */
	mpk_domain *md;
	mpk_heap *mh;
	REQUIRE(md = mpk_domain_create("ia-misuse", MPK_RW, 0));
	REQUIRE(mh = mpk_heap_create(md, 0));
	REQUIRE(mpk_misuse_handler_set(allocating_handler, NULL) == 0);
	static char not_a_block[64] __attribute__((aligned(16)));
	arm();
	CHECK(mpk_heap_free(mh, not_a_block + 16) == -1);
	CHECK(__atomic_load_n(&bad, __ATOMIC_ACQUIRE) >= 1);
	__atomic_store_n(&armed, 0, __ATOMIC_RELEASE);
	REQUIRE(mpk_misuse_handler_set(NULL, NULL) == 0);

	arm();
	domains_and_regions();
	CHECK(disarm("domains and regions") == 0);
	arm();
	heaps();
	CHECK(disarm("heaps and vaults") == 0);
	arm();
	watch();
	CHECK(disarm("watch") == 0);
	children();
	return t_done();
}
#endif
