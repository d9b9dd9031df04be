/*
 * hw: mpk_set_all() that cannot reach a thread (it keeps SIGRTMAX-2
 * blocked) fails with EAGAIN and changes nothing: the caller and the
 * thread that was reached keep the rights they had (a read in a child
 * forked from each still faults with SEGV_PKUERR and d's key), and the
 * blocked thread, once it unblocks, keeps its own too.  Each keeps exactly
 * what it held (one of them READ, the others none).  Afterwards, with
 * nobody blocking, the same call succeeds and every thread can write.
 */
#include <pthread.h>
#include "t.h"

static mpk_domain *d;
static unsigned char *p;

/* A worker runs commands sent down its pipe and answers each with an int. */
struct worker {
	pthread_t th;
	int cmd[2], ans[2];
	int block; /* keep SIGRTMAX-2 blocked until told */
};

static void *work(void *arg)
{
	struct worker *w = arg;
	char c;

	if (w->block) {
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, SIGRTMAX - 2);
		REQUIRE(pthread_sigmask(SIG_BLOCK, &s, NULL) == 0);
	}
	for (;;) {
		int r = 0;
		REQUIRE(read(w->cmd[0], &c, 1) == 1);
		if (c == 'q')
			return NULL;
		if (c == 'g') {
			r = mpk_get(d);
		} else if (c == 'r') { /* may a child forked here read p? */
			struct t_fault f = t_read_in_child(p);
			r = f.faulted ? (f.code == SEGV_PKUERR && f.pkey == mpk_domain_key(d) ? 1 : -1) : 0;
		} else if (c == 'R') {
			r = mpk_set(d, MPK_READ);
		} else if (c == 'w') {
			p[1] = 1;
		} else if (c == 'u') {
			sigset_t s;
			sigemptyset(&s);
			sigaddset(&s, SIGRTMAX - 2);
			r = pthread_sigmask(SIG_UNBLOCK, &s, NULL);
		}
		REQUIRE(write(w->ans[1], &r, sizeof(r)) == (ssize_t)sizeof(r));
	}
}

static int ask(struct worker *w, char c)
{
	int r;
	REQUIRE(write(w->cmd[1], &c, 1) == 1);
	REQUIRE(read(w->ans[0], &r, sizeof(r)) == (ssize_t)sizeof(r));
	return r;
}

static void start(struct worker *w, int block)
{
	w->block = block;
	REQUIRE(pipe(w->cmd) == 0 && pipe(w->ans) == 0);
	REQUIRE(pthread_create(&w->th, NULL, work, w) == 0);
	ask(w, 'g'); /* running, and blocking if it should */
}

int main(void)
{
	struct worker a, b, c;

	t_need_hw();
	REQUIRE(d = mpk_domain_create("set-all-eagain", MPK_NONE, 0));
	REQUIRE(p = mpk_alloc(d, 4096));
	start(&a, 0);
	start(&b, 1);
	start(&c, 0);
	CHECK(ask(&c, 'R') == 0); /* c holds READ */

	CHECK_ERR(mpk_set_all(d, MPK_RW), EAGAIN);

	/* Nothing changed. */
	CHECK(mpk_get(d) == MPK_NONE);
	CHECK_FAULT(t_read_in_child(p), d, p);
	CHECK(ask(&a, 'g') == MPK_NONE);
	CHECK(ask(&a, 'r') == 1);
	CHECK(ask(&c, 'g') == MPK_READ);
	CHECK(ask(&c, 'r') == 0);
	CHECK(ask(&b, 'u') == 0); /* the pending signal arrives now */
	CHECK(ask(&b, 'g') == MPK_NONE);
	CHECK(ask(&b, 'r') == 1);

	/* Nobody blocks now: it works, for everyone. */
	CHECK(mpk_set_all(d, MPK_RW) == 0);
	CHECK(mpk_get(d) == MPK_RW);
	p[0] = 1;
	CHECK(ask(&a, 'g') == MPK_RW);
	CHECK(ask(&b, 'g') == MPK_RW);
	CHECK(ask(&c, 'g') == MPK_RW);
	ask(&a, 'w');
	ask(&b, 'w');
	ask(&c, 'w');
	CHECK(p[1] == 1);

	struct worker *all[] = { &a, &b, &c };
	for (int i = 0; i < 3; i++) {
		char q = 'q';
		REQUIRE(write(all[i]->cmd[1], &q, 1) == 1);
		pthread_join(all[i]->th, NULL);
	}
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
