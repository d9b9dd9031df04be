/* Pitfall: root writes debugfs x86/init_pkru, the PKRU the kernel gives
 * every signal handler (and every program it starts): 0 opens every key,
 * so a handler reads the closed secret.  Root can always do it from
 * outside; after mpk_lockdown(MPK_LOCK_NO_OPEN) this process cannot open
 * the file any more (EPERM).  Without MPK_LOCK_NO_OPEN the lockdown does
 * not stop it.  The file exists where the CPU has keys, for root with
 * debugfs (mounted for the test if it is not, on hw only); elsewhere n/a.
 * The setting is the whole machine's: the child writes the value found
 * back right after its handler ran, and the parent again at the end. */
#include "t_pit.h"

#include <sys/mount.h>

#define INIT_PKRU "/sys/kernel/debug/x86/init_pkru"

static char buf[64];

static void on_usr1(int sig)
{
	(void)sig;
	memcpy(buf, pit_secret, sizeof(PIT_SECRET)); /* with the handler's PKRU */
}

static bool put(const char *value)
{
	int fd = open(INIT_PKRU, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool ok = write(fd, value, strlen(value)) == (ssize_t)strlen(value);
	close(fd);
	return ok;
}

static char saved[32];

static int attempt(void)
{
	int fd = open(INIT_PKRU, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == EPERM ? O_EPERM : O_NA;
	if (write(fd, "0", 1) != 1) {
		close(fd);
		return O_NA;
	}
	close(fd);
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	put(saved);
	return pit_copy_outcome(0, 0, buf);
}

int main(void)
{
	int fd = open(INIT_PKRU, O_RDONLY | O_CLOEXEC);
	bool mounted = false;
	/* Only where the file can exist (keys on): the host's mounts are
	 * otherwise left as they are. */
	if (fd < 0 && errno == ENOENT && geteuid() == 0 && t_backend() == MPK_BACKEND_HW &&
	    !mount("none", "/sys/kernel/debug", "debugfs", 0, NULL)) {
		mounted = true;
		fd = open(INIT_PKRU, O_RDONLY | O_CLOEXEC);
	}
	if (fd >= 0) {
		ssize_t n = read(fd, saved, sizeof(saved) - 1);
		close(fd);
		saved[n > 0 ? n : 0] = 0;
	}
	struct pit p = { "root writes init_pkru", attempt, NULL, MPK_LOCK_ERRNO | MPK_LOCK_NO_OPEN,
			 { B(O_LEAKED) | B(O_NA), B(O_NA) | B(O_FAULT) }, { B(O_EPERM), B(O_EPERM) },
			 "MPK_LOCK_NO_OPEN keeps this process from opening it; root outside is not stopped" };
	int rc = pit_main(&p);
	if (saved[0])
		put(saved);
	if (mounted)
		umount("/sys/kernel/debug");
	return rc;
}
