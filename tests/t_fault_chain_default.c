/*
 * With no handler installed before mpk_fault_handler_install(), a SIGSEGV
 * that is not mpkit's takes the default action: the process dies of SIGSEGV
 * (not SIGABRT) and prints no mpkit report.  Checked for a write to a
 * read-only page, a NULL dereference and a SIGSEGV sent with raise(); a
 * domain fault, for contrast, aborts with a report.
 */
#include "t.h"

static mpk_domain *d;
static unsigned char *dp, *ro;
/* volatile: the compiler must not see a constant NULL-ish address */
static void *volatile near_null = (void *)8;

/* The child: fault in way *what (0..3). */
static void fault(void *what)
{
	signal(SIGSEGV, SIG_DFL);
	if (mpk_fault_handler_install(NULL, NULL))
		_exit(3);
	switch (*(const int *)what) {
	case 0: t_touch_write(ro + 1); break;
	case 1: t_touch_read(near_null); break;
	case 2: raise(SIGSEGV); break;
	case 3:
		if (mpk_set(d, MPK_NONE))
			_exit(5);
		t_touch_read(dp);
		break;
	}
	_exit(4);
}

/* Run what=0..3 in a child with stderr captured; its status and stderr. */
static int run(int what, char *err, size_t size)
{
	return t_child_stderr(fault, &what, err, size);
}

int main(void)
{
	static const char *what[] = { "read-only page", "NULL", "raise(SIGSEGV)" };
	char err[8192];

	t_backend();
	REQUIRE(d = mpk_domain_create("chain-dfl", MPK_RW, 0));
	REQUIRE(dp = mpk_alloc(d, 4096));
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(ro != MAP_FAILED);

	for (int i = 0; i < 3; i++) {
		int st = run(i, err, sizeof(err));
		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV)
			t_fail("%s: child status 0x%x, want death by SIGSEGV", what[i], st);
		if (strstr(err, "mpkit"))
			t_fail("%s: mpkit reported a fault that is not its own:\n%s", what[i], err);
	}
	int st = run(3, err, sizeof(err));
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	CHECK(strstr(err, "domain \"chain-dfl\"") != NULL);
	return t_done();
}
