/*
 * A lockdown the kernel would refuse leaves the process as it was: while
 * another thread runs under a seccomp filter of its own, the filter cannot
 * be put on every thread (TSYNC), and mpk_lockdown() fails with EAGAIN
 * having set nothing: no_new_privs (which nothing can clear once set), the
 * seccomp mode, dumpability, the lockdown flags, the rest of t_snap.h.
 * Once that thread is gone, the same lockdown succeeds.
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>

#include "t_snap.h"

static int cmd[2], ack[2];

/* Under a filter of its own (it allows everything), until told. */
static void *apart(void *arg)
{
	struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog prog = { 1, &allow };
	char c;
	int rc = -1;

	(void)arg;
	if (!prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) /* this thread's alone */
		rc = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
	REQUIRE(write(ack[1], &rc, sizeof(rc)) == (ssize_t)sizeof(rc));
	REQUIRE(read(cmd[0], &c, 1) == 1);
	return NULL;
}

int main(void)
{
	pthread_t th;
	int rc;

	t_backend();
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0)
		t_skip("no seccomp in this kernel");
	REQUIRE(pipe(cmd) == 0 && pipe(ack) == 0);
	mpk_domain *d = mpk_domain_create("tsync", MPK_RW, 0);
	REQUIRE(d && mpk_alloc(d, 4096));
	REQUIRE(pthread_create(&th, NULL, apart, NULL) == 0);
	REQUIRE(read(ack[0], &rc, sizeof(rc)) == (ssize_t)sizeof(rc));
	if (rc) {
		REQUIRE(write(cmd[1], "q", 1) == 1);
		pthread_join(th, NULL);
		t_skip("no seccomp filters for a thread here");
	}

	t_snap_begin();
	CHECK(t_snap_before.nnp == 0 && t_snap_before.seccomp == 0);
	CHECK_ERR(mpk_lockdown(MPK_LOCK_ERRNO), EAGAIN);
	t_snap_end(0, "mpk_lockdown() with a thread under its own filter");
	CHECK_ERR(mpk_lockdown(MPK_LOCK_ERRNO | MPK_LOCK_SEAL), EAGAIN);
	t_snap_end(0, "mpk_lockdown() again");

	REQUIRE(write(cmd[1], "q", 1) == 1);
	pthread_join(th, NULL);
	/* A joined thread may linger in /proc (and the kernel's list) for
	 * a moment. */
	for (int i = 0; i < 200 && mpk_lockdown(MPK_LOCK_ERRNO) && errno == EAGAIN; i++)
		usleep(10000);
	CHECK(mpk_lockdown_flags() == (int)MPK_LOCK_ERRNO);
	CHECK(prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 2);
	int t = t_done();
	fflush(NULL);
	_exit(t);
}
