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

int main(void)
{
	struct pit p = { "PTRACE_PEEKDATA (child)", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_LEAKED) }, { B(O_EPERM), B(O_EPERM) }, NULL };
	return pit_main(&p);
}
