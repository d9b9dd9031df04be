/* SPDX-License-Identifier: MIT */
#include "t_parked.h"

struct t_park_state t_park;

static void t_park_handler(int sig)
{
	char c = 'i';
	(void)sig;
	if (t_park.in_handler)
		t_park.in_handler();
	if (write(t_park.in[1], &c, 1) != 1 || read(t_park.release[0], &c, 1) != 1)
		_exit(3);
}

static void *t_park_main(void *arg)
{
	char c = 'r';
	(void)arg;
	t_park.before();
	REQUIRE(write(t_park.ready[1], &c, 1) == 1);
	REQUIRE(read(t_park.go[0], &c, 1) == 1); /* the handler runs in here */
	t_park.after();
	return NULL;
}

void t_park_start(void (*before)(void), void (*after)(void))
{
	char c;
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = t_park_handler;
	sa.sa_flags = SA_RESTART;
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
	REQUIRE(pipe(t_park.ready) == 0 && pipe(t_park.in) == 0);
	REQUIRE(pipe(t_park.release) == 0 && pipe(t_park.go) == 0);
	t_park.before = before;
	t_park.after = after;
	REQUIRE(pthread_create(&t_park.th, NULL, t_park_main, NULL) == 0);
	REQUIRE(read(t_park.ready[0], &c, 1) == 1);
}

void t_park_enter(void)
{
	char c;
	REQUIRE(pthread_kill(t_park.th, SIGUSR1) == 0);
	REQUIRE(read(t_park.in[0], &c, 1) == 1);
}

void t_park_release(void)
{
	char c = 'g';
	REQUIRE(write(t_park.release[1], &c, 1) == 1);
	REQUIRE(write(t_park.go[1], &c, 1) == 1);
	REQUIRE(pthread_join(t_park.th, NULL) == 0);
	int *fds[] = { t_park.ready, t_park.in, t_park.release, t_park.go };
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		close(fds[i][0]), close(fds[i][1]);
}

void t_park_check_abc(mpk_domain *a, unsigned char *pa, mpk_domain *b, unsigned char *pb,
		      mpk_domain *c, unsigned char *pc)
{
	if (mpk_get(a) != MPK_RW)
		t_fail("holds %d to A (key %d), not RW", mpk_get(a), mpk_domain_key(a));
	CHECK_NO_FAULT(t_read_in_child(pa + 1));
	CHECK_NO_FAULT(t_write_in_child(pa + 2));
	if (mpk_get(c) != MPK_READ)
		t_fail("holds %d to C (key %d), not READ: the set_all missed its own code",
		       mpk_get(c), mpk_domain_key(c));
	CHECK_NO_FAULT(t_read_in_child(pc + 3));
	struct t_fault f = t_write_in_child(pc + 4);
	CHECK(f.faulted && f.where == (void *)(pc + 4));
	CHECK(mpk_get(b) == MPK_NONE);
	CHECK_FAULT(t_read_in_child(pb + 5), b, pb + 5);
}
