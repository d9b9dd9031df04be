/* SPDX-License-Identifier: MIT */
/*
 * keyd: a signing and encryption daemon whose long-term keys live in an
 * mpkit vault, open only inside the crypto call, and whose heartbeat
 * handler has the Heartbleed bug (it echoes back as many bytes as the
 * client says it sent).  See docs/examples.md.
 *
 *	keyd [--plain | --lockdown] [--key-file FILE] [--port PORT]
 *
 * --plain keeps the keys in a malloc()ed block instead, as most daemons do.
 * --lockdown calls mpk_lockdown() once the keys are in the vault, before
 * the first connection: then the 'D' request's system calls (see proto.h)
 * fail as well (EPERM from the filter, EACCES from Landlock for
 * /proc/self/mem, or a fault that ends the connection).
 * Where the kernel has memfd_secret, the vault is kept from the kernel too:
 * without --lockdown the 'D' request's process_vm_readv and /proc/self/mem
 * fail (EFAULT, EIO); its pkey_mprotect and mprotect still work, as the
 * thread then reads the key itself.  The start line says which.
 * In both builds the keys sit right after the connection-buffer pool, so
 * the over-read walks into them; only their protection differs.
 *
 * Threads: one per connection.  An over-read of the vault faults in that
 * connection's thread; the fault callback prints mpkit's report and
 * siglongjmp()s back to the top of that thread, which closes its socket
 * and exits.  That is sound here because the bug runs with the key closed
 * (no MPK_WITH scope is unwound) and holds no lock of the library's or
 * libc's (a memcpy between our own buffers); every other connection runs
 * on.  A child per connection would isolate more, but the vault is zero in
 * a forked child (MADV_WIPEONFORK), which is the point of a vault.
 *
 * On the soft backend rights are process-wide: while one thread signs,
 * every thread could read the key.  keyd then serialises requests (one
 * lock around each), so that no request runs while another has the key
 * open; on hw each thread's rights are its own and requests run in
 * parallel.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "mpkit.h"
#include "proto.h"

#define SLOT_SIZE 1024
#define NSLOTS 32
#define POOL_SIZE (SLOT_SIZE * NSLOTS)

struct conn {
	int fd, slot;
	int err;             /* the reply is this errno (status 1) */
	bool locked;         /* holds serial_lock (soft) */
	sigjmp_buf jmp;      /* where a fault in this connection lands */
	unsigned char reply[5 + KEYD_MAX_REPLY];
};

static bool plain, locked;
static mpk_domain *key_dom;
static struct keyd_keys *keys;
static unsigned char pubkey[32];
static unsigned char *pool; /* NSLOTS request buffers */
static unsigned slots_used; /* bitmap */
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static bool serial;         /* soft backend: one request at a time */
static pthread_mutex_t serial_lock = PTHREAD_MUTEX_INITIALIZER;
static int stopping; /* atomic: set by SIGTERM */
static unsigned long n_requests, n_conns, n_faults;
static __thread struct conn *cur;

/* ---- where the keys live ---- */

/* The only places the keys are open: for this thread, for this call. */
static mpk_scope keys_open(void)
{
	return plain ? (mpk_scope){ NULL, -1 } : mpk_enter(key_dom, MPK_READ);
}

/* Close them again: a failed close would leave the keys open, so stop. */
static void keys_close(mpk_scope *s)
{
	if (mpk_leave(s)) {
		perror("keyd: mpk_leave");
		abort();
	}
}

/* Start of the mapping holding p, from /proc/self/maps, or 0; *end and
 * perms ("rw-p"...) of it too. */
static uintptr_t mapping_of(const void *p, uintptr_t *end, char perms[5])
{
	unsigned long lo, hi, want = (unsigned long)p, found = 0;
	char line[512], pm[5];
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, pm) == 3 && lo <= want && want < hi) {
			found = lo;
			*end = hi;
			memcpy(perms, pm, 5);
		}
	fclose(f);
	return found;
}

static uintptr_t mapping_start(const void *p)
{
	uintptr_t end;
	char perms[5];
	return mapping_of(p, &end, perms);
}

/* The pool right below the vault's pages.  mpkit keeps the vault in a
 * reserved window, with inaccessible reserved pages below it (the guard);
 * the pool takes their place on purpose (MAP_FIXED, after checking that
 * the whole range is that reservation), so that the over-read runs
 * straight into the key: the worst layout an allocator could give, and
 * the one the plain build has.  A real program never maps into mpkit's
 * reservation; keyd makes no more domain memory after this. */
static void *pool_below(uintptr_t vault)
{
	uintptr_t lo = vault - POOL_SIZE, gend = 0;
	char perms[5] = "";
	void *p;

	if (mapping_of((void *)lo, &gend, perms) != 0 && (gend < vault || strcmp(perms, "---p"))) {
		errno = EEXIST; /* something else lies right below the vault */
		return MAP_FAILED;
	}
	if (!gend) { /* a hole: take it */
		p = mmap((void *)lo, POOL_SIZE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		return p != MAP_FAILED && p != (void *)lo ? (errno = EEXIST, MAP_FAILED) : p;
	}
	return mmap((void *)lo, POOL_SIZE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
}

static int read_seed(const char *file, unsigned char seed[32])
{
	if (!file) {
		randombytes_buf(seed, 32);
		return 0;
	}
	FILE *f = fopen(file, "rb");
	if (!f || fread(seed, 1, 32, f) != 32) {
		fprintf(stderr, "keyd: %s: cannot read a 32-byte seed\n", file);
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	return 0;
}

/* Plain: one malloc()ed block, the pool then the keys (then room, so the
 * over-read stays in the block).  mpkit: the keys are a secret in domain
 * "keyd-key", and the pool is mapped right below the vault's pages. */
static int setup_keys(const char *file)
{
	unsigned char seed[32];

	if (read_seed(file, seed))
		return -1;
	if (plain) {
		pool = calloc(1, POOL_SIZE + sizeof(*keys) + 65536);
		if (!pool)
			return -1;
		keys = (struct keyd_keys *)(pool + POOL_SIZE);
		keyd_derive(seed, keys);
	} else {
		key_dom = mpk_domain_create("keyd-key", MPK_NONE, 0);
		if (!key_dom || !(keys = mpk_secret_alloc(key_dom, sizeof(*keys)))) {
			perror("keyd: mpkit vault");
			return -1;
		}
		MPK_WITH(key_dom, MPK_RW) {
			keyd_derive(seed, keys);
		}
		uintptr_t vault = mapping_start(keys);
		pool = vault ? pool_below(vault) : MAP_FAILED;
		if (pool == MAP_FAILED || (uintptr_t)pool != vault - POOL_SIZE) {
			perror("keyd: mapping the pool below the vault");
			return -1;
		}
	}
	sodium_memzero(seed, sizeof(seed));
	/* The public half of the key is public: copy it out once. */
	mpk_scope s = keys_open();
	memcpy(pubkey, keys->sign_sk + 32, 32);
	keys_close(&s);
	return 0;
}

/* ---- requests ---- */

/* The bug's copy, a byte at a time: it reads other connections' buffers
 * while they fill (that is the leak), so ThreadSanitizer is told not to
 * instrument it; volatile keeps it from becoming a memcpy() call. */
__attribute__((no_sanitize("thread")))
static void leak_copy(unsigned char *dst, const volatile unsigned char *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = src[i];
}

/* THE SECOND BUG: the 'D' request's peek at a client-given address. */
static long debug_peek(struct conn *c, int how, uintptr_t a, unsigned n, unsigned char *out)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), lo = a & ~(page - 1);
	size_t span = ((a + n + page - 1) & ~(page - 1)) - lo;
	long r = -1;

	switch (how) {
	case 'v': {
		struct iovec l = { out, n }, rm = { (void *)a, n };
		r = process_vm_readv(getpid(), &l, 1, &rm, 1, 0);
		break;
	}
	case 'm': {
		int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			r = pread(fd, out, n, (off_t)a);
			int e = errno;
			close(fd);
			errno = e;
		}
		break;
	}
	case 'k': /* give the pages key 0, then copy */
	case 'p': /* make the pages readable, then copy */
		r = how == 'k' ? syscall(SYS_pkey_mprotect, lo, span, PROT_READ | PROT_WRITE, 0)
			       : mprotect((void *)lo, span, PROT_READ | PROT_WRITE);
		if (r == 0) {
			leak_copy(out, (const unsigned char *)a, n);
			r = n;
		}
		break;
	default:
		errno = EINVAL;
	}
	if (r < 0) {
		c->err = errno;
		return 0;
	}
	return r;
}

/* Handle one request in c's slot; the reply goes to c->reply.  Returns
 * the reply's data length, or -1 to drop the connection. */
static long handle(struct conn *c, int op, unsigned len)
{
	unsigned char *in = pool + (size_t)c->slot * SLOT_SIZE;
	unsigned char *out = c->reply + 5;
	mpk_scope s;

	switch (op) {
	case 'P':
		memcpy(out, pubkey, 32);
		return 32;
	case 'S':
		s = keys_open();
		crypto_sign_detached(out, NULL, in, len, keys->sign_sk);
		keys_close(&s);
		return 64;
	case 'X':
		randombytes_buf(out, crypto_secretbox_NONCEBYTES);
		s = keys_open();
		crypto_secretbox_easy(out + crypto_secretbox_NONCEBYTES, in, len, out,
				      keys->box_key);
		keys_close(&s);
		return crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + len;
	case 'E':
		if (len < 2)
			return -1;
		/* THE BUG: N comes from the client and is never checked
		 * against len - 2, the bytes it actually sent. */
		unsigned n = keyd_get16(in);
		leak_copy(out, in + 2, n);
		return n;
	case 'D':
		if (len != 11 || keyd_get16(in + 9) > KEYD_DEBUG_MAX)
			return -1;
		return debug_peek(c, in[0],
				  (uintptr_t)keyd_get32(in + 1) << 32 | keyd_get32(in + 5),
				  keyd_get16(in + 9), out);
	}
	return -1;
}

static void serve(struct conn *c)
{
	unsigned char hdr[3];

	while (keyd_io(c->fd, hdr, 3, 0) == 0) {
		unsigned len = keyd_get16(hdr + 1);
		if (len > KEYD_MAX_PAYLOAD ||
		    keyd_io(c->fd, pool + (size_t)c->slot * SLOT_SIZE, len, 0))
			return;
		if (serial) {
			pthread_mutex_lock(&serial_lock);
			c->locked = true;
		}
		c->err = 0;
		long n = handle(c, hdr[0], len);
		if (serial) {
			c->locked = false;
			pthread_mutex_unlock(&serial_lock);
		}
		if (n < 0)
			return;
		__atomic_add_fetch(&n_requests, 1, __ATOMIC_RELAXED);
		c->reply[0] = c->err != 0;
		if (c->err) {
			keyd_put32(c->reply + 5, (uint32_t)c->err);
			n = 4;
		}
		keyd_put32(c->reply + 1, (uint32_t)n);
		if (keyd_io(c->fd, c->reply, 5 + (size_t)n, 1))
			return;
	}
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;

	cur = c;
	if (sigsetjmp(c->jmp, 1) == 0) {
		serve(c);
	} else if (c->locked) {
		/* Came back from the fault callback in mid-request. */
		c->locked = false;
		pthread_mutex_unlock(&serial_lock);
	}
	cur = NULL;
	close(c->fd);
	pthread_mutex_lock(&slot_lock);
	slots_used &= ~(1u << c->slot);
	pthread_mutex_unlock(&slot_lock);
	free(c);
	return NULL;
}

/* Signal context: only async-signal-safe calls. */
static int on_fault(const struct mpk_fault *f, void *arg)
{
	static const char msg[] = "keyd: a request touched the key: ending its connection\n";
	struct conn *c = cur;
	char buf[512];

	(void)arg;
	if (!c || f->domain != key_dom)
		return MPK_FAULT_ABORT; /* not a request's bug: report and abort */
	__atomic_add_fetch(&n_faults, 1, __ATOMIC_RELAXED);
	size_t n = mpk_fault_format(f, buf, sizeof(buf));
	/* A failed write to stderr changes nothing here. */
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) >= 0)
		(void)!write(STDERR_FILENO, buf, n < sizeof(buf) ? n : sizeof(buf) - 1);
	siglongjmp(c->jmp, 1);
}

/* ---- the daemon ---- */

static void on_term(int sig)
{
	(void)sig;
	__atomic_store_n(&stopping, 1, __ATOMIC_RELAXED);
}

static int listen_on(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)&a, &alen)) {
		perror("keyd: listen");
		return -1;
	}
	printf("keyd: listening on 127.0.0.1:%d\n", ntohs(a.sin_port));
	return fd;
}

static void accept_loop(int lfd)
{
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	while (!__atomic_load_n(&stopping, __ATOMIC_RELAXED)) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue; /* EINTR from SIGTERM, or a client gone */
		/* Replies go out at once, even while an earlier one is not
		 * acknowledged (clients send requests in batches). */
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		struct conn *c = calloc(1, sizeof(*c));
		pthread_mutex_lock(&slot_lock);
		int slot = slots_used == ~0u ? -1 : __builtin_ctz(~slots_used);
		if (slot >= 0)
			slots_used |= 1u << slot;
		pthread_mutex_unlock(&slot_lock);
		pthread_t t;
		if (!c || slot < 0) {
			fprintf(stderr, "keyd: no room for a connection\n");
			free(c);
			close(fd);
			continue;
		}
		c->fd = fd;
		c->slot = slot;
		__atomic_add_fetch(&n_conns, 1, __ATOMIC_RELAXED);
		/* mpk_thread_create: the thread starts with every domain
		 * closed, whatever this one holds. */
		if (mpk_thread_create(&t, &attr, conn_main, c)) {
			close(fd);
			free(c);
		}
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: keyd [--plain | --lockdown] [--key-file FILE] [--port PORT]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *key_file = NULL;
	int port = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--plain"))
			plain = true;
		else if (!strcmp(argv[i], "--key-file") && i + 1 < argc)
			key_file = argv[++i];
		else if (!strcmp(argv[i], "--port") && i + 1 < argc)
			port = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--lockdown"))
			locked = true;
		else
			usage();
	}
	if (plain && locked)
		usage(); /* lockdown guards domains; plain has none */
	if (sodium_init() < 0 || mpk_init()) {
		fprintf(stderr, "keyd: sodium_init or mpk_init failed\n");
		return 1;
	}
	serial = !plain && mpk_backend() == MPK_BACKEND_SOFT;
	if (setup_keys(key_file))
		return 1;
	if (!plain && mpk_fault_handler_install(on_fault, NULL)) {
		perror("keyd: mpk_fault_handler_install");
		return 1;
	}
	struct sigaction sa = { .sa_handler = on_term }; /* no SA_RESTART */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (locked) {
		/* Everything is set up: the keys, the pool, the handler.
		 * From here: denied calls fail with EPERM (the daemon serves
		 * on), /proc/self/mem cannot be opened (this thread and the
		 * connection threads it starts later). */
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (mpk_lockdown(MPK_LOCK_ERRNO | MPK_LOCK_PROC_MEM)) {
			perror("keyd: mpk_lockdown");
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		printf("keyd: locked down (flags 0x%x) in %.0f us\n", mpk_lockdown_flags(),
		       (t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3);
	}

	if (plain)
		printf("keyd: keys in a malloc()ed block at %p, right after the buffer pool\n",
		       (void *)keys);
	else {
		struct mpk_info in;
		bool kx = !mpk_info(&in) && in.secretmem_vaults;
		printf("keyd: keys in an mpkit vault, domain \"keyd-key\" (backend %s%s), at %p;"
		       " buffer pool just below it; kept from the kernel (memfd_secret): %s\n",
		       mpk_backend_name(mpk_backend()), serial ? ", requests serialised" : "",
		       (void *)keys, kx ? "yes" : "no");
	}
	int lfd = listen_on(port);
	if (lfd < 0)
		return 1;
	accept_loop(lfd);
	printf("keyd: %lu requests served, %lu connections, %lu ended by a protection fault\n",
	       __atomic_load_n(&n_requests, __ATOMIC_RELAXED),
	       __atomic_load_n(&n_conns, __ATOMIC_RELAXED),
	       __atomic_load_n(&n_faults, __ATOMIC_RELAXED));
	if (locked) {
		/* Exit handlers (LeakSanitizer's stops threads with ptrace,
		 * which the filter denies) have nothing to do for a daemon. */
		fflush(NULL);
		_exit(0);
	}
	return 0;
}
