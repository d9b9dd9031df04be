/* SPDX-License-Identifier: MIT */
#include "t_pit.h"

static const char *const pit_names[] = {
	"?", "LEAKED", "BLOCKED (EPERM)", "BLOCKED (EFAULT)", "BLOCKED (EACCES)",
	"BLOCKED (killed, SIGSYS)", "BLOCKED (SIGSEGV)", "n/a (SIGILL: no PKU)",
	"BLOCKED (WRPKRU check: exit 134)", "REFUSED (lockdown fails)",
	"kept (no effect)", "n/a", "allowed", "BLOCKED (no dump: dd, dumpable 0)",
	"WRITTEN (overwritten)", "BLOCKED (killed, SIGTRAP)", "ERROR",
};

mpk_domain *pit_dom;

unsigned char *pit_secret;

static bool pit_kexcl; /* the secret in memfd_secret memory */

bool pit_is_secret(const void *p)
{
	return !memcmp(p, PIT_SECRET, sizeof(PIT_SECRET));
}

int pit_error(const char *what, int err)
{
	fprintf(stderr, "pit: no outcome: %s%s%s\n", what, err ? ": " : "",
		err == ETIMEDOUT ? "no completion within 5 s" : err ? strerror(err) : "");
	return O_ERROR;
}

int pit_copy_outcome(long rc, int err, const void *buf)
{
	if (rc >= 0)
		return pit_is_secret(buf) ? O_LEAKED : O_KEPT;
	return err == EPERM ? O_EPERM : err == EFAULT || err == EIO ? O_EFAULT
	     : err == EACCES ? O_EACCES : err == ENOSYS ? O_NA
	     : pit_error("the call failed with an errno no outcome names", err);
}

void pit_default_segv(void)
{
	struct { void *handler; unsigned long flags; void *restorer; unsigned long mask; } dfl = { 0 };
	syscall(SYS_rt_sigaction, SIGSEGV, &dfl, NULL, 8);
}

static int pit_child(const struct pit *p, bool locked)
{
	pit_dom = mpk_domain_create("pit-secret", MPK_RW, pit_kexcl ? MPK_DOMAIN_SECRETMEM : 0);
	if (!pit_dom)
		return pit_error("mpk_domain_create()", errno);
	pit_secret = mpk_alloc(pit_dom, 4096);
	if (!pit_secret)
		return pit_error("mpk_alloc()", errno);
	memcpy(pit_secret, PIT_SECRET, sizeof(PIT_SECRET));
	if (mpk_set(pit_dom, MPK_NONE))
		return pit_error("mpk_set()", errno);
	pit_default_segv(); /* a fault must end the child by SIGSEGV */
	if (p->setup)
		p->setup();
	if (locked && mpk_lockdown(p->lock_flags))
		return errno == EPERM || errno == EBUSY ? O_REFUSED : pit_error("mpk_lockdown()", errno);
	fflush(NULL);
	return p->attempt();
}

/* The child of pit_run_one(). */
struct pit_case {
	const struct pit *p;
	bool locked;
};

static int pit_case_main(void *arg)
{
	const struct pit_case *c = arg;
	return pit_child(c->p, c->locked);
}

static int pit_run_once(const struct pit *p, bool locked)
{
	struct pit_case pc = { p, locked };
	struct t_child c = t_child_ret(pit_case_main, &pc, 0);

	switch (c.signal) {
	case 0: break;
	case SIGSYS: return O_KILLED;
	case SIGSEGV: return O_FAULT;
	case SIGILL: return O_SIGILL;
	case SIGTRAP: return O_TRAPPED;
	default:
		fprintf(stderr, "pit: no outcome: the attempt ended by signal %d\n", c.signal);
		return O_ERROR;
	}
	if (c.exit_code == 134)
		return O_CHECK;
	return c.exit_code >= O_LEAKED && c.exit_code <= O_ERROR ? c.exit_code : O_ERROR;
}

/* ERROR is no outcome: the attempt itself could not be made (a resource
 * the kernel refused, a completion that never came; t_pit_io_uring_sqpoll
 * met one in about 125 runs, before pit_error() said which).  It is made
 * once more, and an ERROR then counts. */
static int pit_run_one(const struct pit *p, bool locked)
{
	int o = pit_run_once(p, locked);

	if (o != O_ERROR)
		return o;
	fprintf(stderr, "pit: %s %s lockdown: ERROR, made once more\n", p->name, locked ? "after" : "before");
	return pit_run_once(p, locked);
}

void *pit_plant(const void *code, size_t len)
{
	unsigned char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	memcpy(p, code, len);
	if (mprotect(p, 4096, PROT_READ | PROT_EXEC)) {
		munmap(p, 4096);
		return NULL;
	}
	return p;
}

uintptr_t pit_mpkit_site(int i)
{
	const int32_t *e = __start_mpk_wrpkru_sites + i;
	return e < __stop_mpk_wrpkru_sites ? (uintptr_t)e + (intptr_t)*e : 0;
}

void t_exit_locked(void)
{
	int rc = t_done();
	fflush(NULL);
	_exit(rc);
}

int pit_main(const struct pit *p)
{
	struct utsname u;
	int b = t_backend() == MPK_BACKEND_HW ? 0 : 1;
	const char *why = p->absent ? p->absent() : NULL;

	if (why || (why = t_lockdown_absent(p->lock_flags)))
		t_skip(why);
	if (uname(&u))
		strcpy(u.release, "?");
	struct mpk_info in;
	if (mpk_info(&in))
		in.secretmem = 0;
	for (int k = 0; k <= (p->kexcl[b] && in.secretmem); k++) {
		char name[64];
		pit_kexcl = k;
		snprintf(name, sizeof(name), "%s%s", p->name, k ? " [secretmem]" : "");
		int before = pit_run_one(p, false), after = pit_run_one(p, true);
		printf("pit: %-26s | %-4s | %-22s | before: %-26s | after: %s%s%s\n", name,
		       b ? "soft" : "hw", u.release, pit_names[before], pit_names[after],
		       p->note ? " -- " : "", p->note ? p->note : "");
		if (!((k ? p->kexcl[b] : p->before[b]) & B(before)))
			t_fail("%s before lockdown: %s, not the documented outcome", name, pit_names[before]);
		if (!(p->after[b] & B(after)))
			t_fail("%s after lockdown: %s, not the documented outcome", name, pit_names[after]);
	}
	if (p->kexcl[b] && !in.secretmem)
		printf("pit: %-26s | %-4s | %-22s | no memfd_secret on this kernel\n", "(secretmem rows)",
		       b ? "soft" : "hw", u.release);
	return t_done();
}
