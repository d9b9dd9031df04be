/*
 * hw, virtual domains (issue 20, item 4): a thread inside a SIGSEGV handler
 * installed with SA_NODEFER and an empty sa_mask (a probe handler: it
 * blocks nothing more than the code it interrupted, so its frame cannot be
 * told from a stale one by the signal mask) keeps its own code's rights
 * while keys move.  Budget 2.  Thread T creates A and holds RW; main holds
 * none to A, and creates C (the second key).  T reads a PROT_NONE page and
 * parks in the program's handler.  Meanwhile main calls mpk_set_all(C,
 * READ), which signals T, and creates B with RW, which needs a key: A, the
 * least recently used, must not be evicted (T's own code holds RW, main
 * none), so C goes (every thread READ) and B gets its key.  After the
 * handler: T still holds RW to A and reads and writes it, holds READ to C
 * (the set_all reached its own code, not only the handler), and nothing of
 * B (a read faults with B's key).  Before the fix the set_all edited only
 * the handler's frame and left T published as holding A closed; A was
 * evicted as closed everywhere, and T lost it.
 */
#define _GNU_SOURCE
#include "t_parked.h"

static mpk_domain *A, *B, *C;
static unsigned char *pa, *pb, *pc, *guard;
static int ready[2], in[2], release_[2];

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	char c = 'i';
	(void)sig;
	(void)uc;
	if ((unsigned char *)si->si_addr != guard) {
		static const char msg[] = "t_hw_evict_in_nodefer_handler: unexpected SIGSEGV\n";
		if (write(2, msg, sizeof(msg) - 1) < 0)
			_exit(2);
		_exit(1);
	}
	if (write(in[1], &c, 1) != 1 || read(release_[0], &c, 1) != 1 ||
	    mprotect(guard, 4096, PROT_READ))
		_exit(3);
}

static void *thread_t(void *arg)
{
	char c = 'r';
	(void)arg;
	REQUIRE(A = mpk_domain_create("A", MPK_RW, 0));
	REQUIRE(pa = mpk_alloc(A, 4096));
	pa[1] = 11;
	REQUIRE(write(ready[1], &c, 1) == 1);
	REQUIRE(read(release_[0], &c, 1) == 1); /* main made C */
	(void)*(volatile unsigned char *)guard; /* parks in the handler */
	/* main set B meanwhile: read it after the handler, not before. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t_park_check_abc(A, pa, B, pb, C, pc);
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	pthread_t t;
	char c = 'g';

	t_need_hw();
	REQUIRE(mpk_set_key_budget(2) == 0);
	REQUIRE(pipe(ready) == 0 && pipe(in) == 0 && pipe(release_) == 0);
	guard = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(guard != MAP_FAILED);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	REQUIRE(sigaction(SIGSEGV, &sa, NULL) == 0);

	REQUIRE(pthread_create(&t, NULL, thread_t, NULL) == 0);
	REQUIRE(read(ready[0], &c, 1) == 1);
	REQUIRE(C = mpk_domain_create("C", MPK_RW, 0));
	REQUIRE(pc = mpk_alloc(C, 4096));
	pc[3] = 33;
	REQUIRE(mpk_set(C, MPK_NONE) == 0);
	REQUIRE(mpk_domain_key(A) > 0 && mpk_domain_key(C) > 0);
	REQUIRE(write(release_[1], &c, 1) == 1);
	REQUIRE(read(in[0], &c, 1) == 1); /* T is in its handler */

	REQUIRE(mpk_set_all(C, MPK_READ) == 0);
	int kc = mpk_domain_key(C);
	REQUIRE(B = mpk_domain_create("B", MPK_RW, 0));
	REQUIRE(pb = mpk_alloc(B, 4096));
	pb[5] = 55;
	CHECK(mpk_domain_key(A) > 0);
	CHECK_ERR(mpk_domain_key(C), ENOENT);
	CHECK(mpk_domain_key(B) == kc);

	REQUIRE(write(release_[1], &c, 1) == 1);
	REQUIRE(pthread_join(t, NULL) == 0);
	CHECK(pc[3] == 33); /* main holds READ to C too */
	return t_done();
}
