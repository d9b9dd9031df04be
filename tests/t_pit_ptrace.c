/* Pitfall: PTRACE_PEEKDATA by a child of the daemon.  ptrace's access
 * ignores keys and PROT_NONE (forced).  After lockdown the child inherits
 * the filter: PTRACE_ATTACH fails with EPERM (and dumpable 0 would stop an
 * unprivileged tracer anyway). */
#include "t_pit.h"
#include <sys/ptrace.h>

static int attempt(void)
{
	pid_t victim = getpid();
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	/* The attacker is a fork() of the program (it inherits the filter). */
	pid_t c = fork();
	if (c < 0)
		return O_ERROR;
	if (c == 0) {
		char buf[64] = { 0 };
		int st;
		if (ptrace(PTRACE_ATTACH, victim, 0, 0))
			_exit(pit_copy_outcome(-1, errno, buf));
		waitpid(victim, &st, 0);
		for (size_t i = 0; i < sizeof(PIT_SECRET); i += sizeof(long)) {
			errno = 0;
			long w = ptrace(PTRACE_PEEKDATA, victim, pit_secret + i, 0);
			if (errno)
				_exit(pit_copy_outcome(-1, errno, buf));
			memcpy(buf + i, &w, sizeof(w));
		}
		ptrace(PTRACE_DETACH, victim, 0, 0);
		_exit(pit_copy_outcome(0, 0, buf));
	}
	int st;
	while (waitpid(c, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : O_ERROR;
}

/* Whether a child may attach to this process at all, before any lockdown:
 * Yama's ptrace_scope 2 (without CAP_SYS_PTRACE) or 3, another security
 * module or a seccomp policy can forbid it.  NULL if it may. */
static const char *absent(void)
{
	static char why[160];
	char scope[16];
	int st;

	pid_t victim = getpid();
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* as attempt() does */
	pid_t c = fork(); /* the same fork() as attempt()'s */
	REQUIRE(c >= 0);
	if (c == 0) {
		if (ptrace(PTRACE_ATTACH, victim, 0, 0))
			_exit(errno == EPERM || errno == ENOSYS ? errno : 0);
		waitpid(victim, &st, 0);
		ptrace(PTRACE_DETACH, victim, 0, 0);
		_exit(0);
	}
	while (waitpid(c, &st, 0) < 0)
		REQUIRE(errno == EINTR);
	int e = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
	if (!e)
		return NULL;
	if (!t_read_file("/proc/sys/kernel/yama/ptrace_scope", scope, sizeof(scope)))
		strcpy(scope, "absent\n");
	scope[strcspn(scope, "\n")] = 0;
	snprintf(why, sizeof(why), "this kernel lets no child ptrace its parent here (PTRACE_ATTACH: %s; "
		 "Yama ptrace_scope: %s)", strerror(e), scope);
	return why;
}

int main(void)
{
	struct pit p = { "PTRACE_PEEKDATA (child)", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_LEAKED) }, { B(O_EPERM), B(O_EPERM) }, NULL, absent,
			 { B(O_EFAULT), B(O_EFAULT) } };
	return pit_main(&p);
}
