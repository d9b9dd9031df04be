/* Pitfall: a hardware breakpoint on the call gate's check.  perf_event_open
 * puts an instruction breakpoint on the compare after one of mpkit's
 * WRPKRUs and delivers its overflow as SIGUSR1 (F_SETSIG, a signal whose
 * action the lockdown leaves alone); a jump onto the WRPKRU with EAX 0 stops
 * there, the handler moves the thread past the check, and sigreturn keeps
 * the PKRU the WRPKRU loaded.  After mpk_lockdown() perf_event_open is
 * denied (EPERM).  Where the kernel or CPU has no such breakpoint, or
 * perf is not allowed, n/a; on soft the WRPKRU is SIGILL. */
#include "t_gate.h"

#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	if (gate_ip(uc) == gate_site + 3)
		gate_land(uc);
}

static int attempt(void)
{
	struct sigaction sa = { .sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO };
	struct perf_event_attr a = { 0 };

	gate_site = pit_mpkit_site(0);
	a.type = PERF_TYPE_BREAKPOINT;
	a.size = sizeof(a);
	a.bp_type = HW_BREAKPOINT_X;
	a.bp_addr = gate_site + 3;
	a.bp_len = sizeof(long);
	a.sample_period = 1;
	a.wakeup_events = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0)
		return errno == EPERM ? O_EPERM : O_NA; /* EACCES: perf_event_paranoid */
	struct f_owner_ex owner = { F_OWNER_TID, (pid_t)syscall(SYS_gettid) };
	if (sigaction(SIGUSR1, &sa, NULL) || fcntl(fd, F_SETOWN_EX, &owner) ||
	    fcntl(fd, F_SETSIG, SIGUSR1) || fcntl(fd, F_SETFL, O_ASYNC))
		return O_ERROR;
	gate_jump(gate_site, false);
}

int main(void)
{
	struct pit p = { "breakpoint on the check", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_LEAKED) | B(O_CHECK) | B(O_NA), B(O_SIGILL) | B(O_NA) },
			 { B(O_EPERM), B(O_EPERM) }, "perf_event_open is denied" };
	return pit_main(&p);
}
