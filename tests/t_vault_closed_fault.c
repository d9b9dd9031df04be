/*
 * A closed secret faults on read and on write (hw: SEGV_PKUERR with the
 * domain's key; soft: SEGV_ACCERR) at the address touched, and with mpkit's
 * fault handler the report names the secret's domain, read or write, and
 * the address.  Read-only, it faults on write only.
 */
#include "t_heap.h"

static unsigned char *key;

static void stray(void *arg)
{
	REQUIRE(mpk_fault_handler_install(NULL, NULL) == 0);
	if (arg)
		t_touch_write(key + 5);
	else
		t_touch_read(key + 5);
	_exit(0);
}

int main(void)
{
	static char report[16384];
	char want[128];

	t_backend();
	t_need_memlock(1 << 20);
	mpk_domain *d = mpk_domain_create("tls-keys", MPK_NONE, 0);
	REQUIRE(d);
	unsigned char *other = mpk_secret_alloc(d, 32);
	key = mpk_secret_alloc(d, 32);
	REQUIRE(other && key);
	MPK_WITH(d, MPK_RW) {
		memset(key, 0x5a, 32);
	}
	CHECK(mpk_get(d) == MPK_NONE);
	CHECK_FAULT(t_read_in_child(key), d, key);
	CHECK_FAULT(t_write_in_child(key + 31), d, key + 31);

	for (int wr = 0; wr < 2; wr++) {
		int st = t_child_stderr(stray, wr ? key : NULL, report, sizeof(report));
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
		CHECK_HAS(report, wr ? "write of domain \"tls-keys\"" : "read of domain \"tls-keys\"");
		snprintf(want, sizeof(want), " at %p ", (void *)(key + 5));
		CHECK_HAS(report, want);
		CHECK_HAS(report, "holds none");
	}

	REQUIRE(mpk_secret_readonly(key) == 0);
	CHECK_NO_FAULT(t_read_in_child(key));
	CHECK_FAULT(t_write_in_child(key), d, key);
	CHECK(key[0] == 0x5a);
	REQUIRE(mpk_secret_noaccess(key) == 0);
	CHECK_FAULT(t_read_in_child(other), d, other);

	CHECK(mpk_secret_free(key) == 0 && mpk_secret_free(other) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
