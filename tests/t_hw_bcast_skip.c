/*
 * hw: a broadcast signals exactly the threads that must change.  Thread B
 * started before domain D existed (it only ever opened E), thread A holds
 * READ to D.  Each step counts the signals mpkit sent and then checks, in
 * every thread, the rights it has (mpk_get) and that they are real (a read
 * or write from a child forked in that thread succeeds or faults with
 * SEGV_PKUERR and D's key):
 *   mpk_set_all(D, NONE)  signals A only (B holds no key open), then twice
 *                         nothing; both fault on a read;
 *   mpk_set_all(D, READ)  signals both, then nothing; both read, writes fault;
 *   an unrelated domain created, closed everywhere and destroyed: nothing.
 * Then a thread C parked in a signal handler, whose own code and handler
 * hold different rights to D: it is signalled although the rights it set
 * last (in the handler) are the target, and after the handler its own
 * code holds the target (a thread skipped by its last write alone would
 * keep its old rights).
 */
#include "t_parked.h"
#include "t_bcast.h"

static mpk_domain *D, *E;
static unsigned char *pd;

struct worker {
	pthread_t th;
	int cmd[2], rep[2];
	void (*setup)(void);
};

static void check_none(void)
{
	CHECK(mpk_get(D) == MPK_NONE);
	CHECK_FAULT(t_read_in_child(pd), D, pd);
}

static void check_read(void)
{
	CHECK(mpk_get(D) == MPK_READ);
	CHECK_NO_FAULT(t_read_in_child(pd));
	CHECK_FAULT(t_write_in_child(pd + 1), D, pd + 1);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char c = 'k';

	w->setup();
	REQUIRE(write(w->rep[1], &c, 1) == 1);
	while (read(w->cmd[0], &c, 1) == 1 && c != 'q') {
		if (c == 'n')
			check_none();
		else
			check_read();
		REQUIRE(write(w->rep[1], &c, 1) == 1);
	}
	return NULL;
}

static void start(struct worker *w, void (*setup)(void))
{
	char c;
	REQUIRE(pipe(w->cmd) == 0 && pipe(w->rep) == 0);
	w->setup = setup;
	REQUIRE(pthread_create(&w->th, NULL, worker_main, w) == 0);
	REQUIRE(read(w->rep[0], &c, 1) == 1);
}

static void ask(struct worker *w, char c)
{
	REQUIRE(write(w->cmd[1], &c, 1) == 1);
	REQUIRE(read(w->rep[0], &c, 1) == 1);
}

static void opens_e(void)
{
	REQUIRE(mpk_set(E, MPK_READ) == 0);
}

static void reads_d(void)
{
	REQUIRE(mpk_set(D, MPK_READ) == 0);
}

/* Signals one mpk_set_all() sent. */
static uint64_t set_all(mpk_domain *d, int rights)
{
	uint64_t s = t_signals_sent();
	REQUIRE(mpk_set_all(d, rights) == 0);
	return t_signals_sent() - s;
}

static void closes_d(void)
{
	REQUIRE(mpk_set(D, MPK_NONE) == 0);
}

static void after_read(void)
{
	check_read();
}

static void after_none(void)
{
	check_none();
}

int main(void)
{
	struct worker a, b;

	t_need_hw();
	REQUIRE(E = mpk_domain_create("E", MPK_NONE, 0));
	start(&b, opens_e); /* before D: it never holds D's key open */
	REQUIRE(D = mpk_domain_create("D", MPK_RW, 0));
	REQUIRE(pd = mpk_alloc(D, 4096));
	REQUIRE(mpk_domain_key(D) > 0);
	start(&a, reads_d);

	uint64_t s0 = mpk__broadcast_skipped();
	CHECK(set_all(D, MPK_NONE) == 1); /* A */
	CHECK(mpk__broadcast_skipped() - s0 == 1); /* B */
	CHECK(set_all(D, MPK_NONE) == 0);
	CHECK(set_all(D, MPK_NONE) == 0);
	ask(&a, 'n');
	ask(&b, 'n');
	CHECK(set_all(D, MPK_READ) == 2);
	CHECK(set_all(D, MPK_READ) == 0);
	ask(&a, 'r');
	ask(&b, 'r');

	uint64_t s = t_signals_sent();
	t_unrelated_domain();
	CHECK(t_signals_sent() - s == 0);

	/* C: READ in its own code, NONE in the handler (its last write). */
	t_park.in_handler = closes_d;
	t_park_start(reads_d, after_none);
	t_park_enter();
	CHECK(set_all(D, MPK_NONE) == 3); /* A, B and C */
	t_park_release();
	ask(&a, 'n');
	ask(&b, 'n');

	/* C: NONE in its own code, READ in the handler. */
	t_park.in_handler = reads_d;
	t_park_start(closes_d, after_read);
	t_park_enter();
	CHECK(set_all(D, MPK_READ) == 3);
	t_park_release();
	ask(&a, 'r');
	ask(&b, 'r');

	REQUIRE(write(a.cmd[1], "q", 1) == 1 && write(b.cmd[1], "q", 1) == 1);
	REQUIRE(pthread_join(a.th, NULL) == 0 && pthread_join(b.th, NULL) == 0);
	return t_done();
}
