/*
 * mpk_guard_library(): a program that links libmpkit.so guards a library
 * it loaded (libguardtest.so, t_guard_cli's) with no `mpkit guard`: the
 * helper, libmpkit-guard.so, opened by the call.  Bad arguments first,
 * each -1 with its errno and nothing changed (ENOTSUP with no helper at
 * MPKIT_GUARD_HELPER, NULL, "", unknown flags, ENOENT for the library not
 * loaded yet, which is guarded afterwards).
 * Permission: once guarded, calls into the library work and write its
 * data, which the program reads; its rights outside stay MPK_READ.  Then
 * EEXIST (the same library again, by either name), EBUSY (another
 * library): nothing changed, the library still works and is still
 * guarded.  Protection: a write from the program (in a child) is killed
 * by mpkit's report, after the guard's line naming own+0x0 and the
 * domain guard:libguardtest.so (SEGV_PKUERR and a key on hw, SEGV_ACCERR
 * on soft); under MPK_GUARD_DENY_ALL a read is too; under
 * MPK_GUARD_REPORT the write goes through and the list at exit names it.
 * Both backends: soft in a child, hw where there are keys (the VM);
 * glibc and musl.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"

static long (*g_add)(long);
static long (*g_apply)(long (*)(long), long);
static long *(*g_ptr)(void);

/* The helper the tests run, beside them (in the VM libmpkit.so is
 * elsewhere). */
static void helper(void)
{
	static char path[4200];
	char cwd[4096];

	REQUIRE(getcwd(cwd, sizeof(cwd)));
	snprintf(path, sizeof(path), "%s/libmpkit-guard.so", cwd);
	t_setenv("MPKIT_GUARD_HELPER", path);
}

static void load(void)
{
	void *h = dlopen("./libguardtest.so", RTLD_NOW);
	REQUIRE(h);
	*(void **)&g_add = dlsym(h, "g_add");
	*(void **)&g_apply = dlsym(h, "g_apply");
	*(void **)&g_ptr = dlsym(h, "g_ptr");
	REQUIRE(g_add && g_apply && g_ptr);
}

/* -1 with errno e. */
static void fails(const char *name, unsigned flags, int e)
{
	errno = 0;
	int rc = mpk_guard_library(name, flags);
	CHECK(rc == -1 && errno == e);
	if (rc != -1 || errno != e)
		fprintf(stderr, "mpk_guard_library(%s, %#x): %d, %s\n", name ? name : "NULL", flags, rc,
			strerror(errno));
}

static long twice(long v)
{
	return 2 * v;
}

/* The library works, and its data is the domain's, closed to writes. */
static void still_guarded(long *state)
{
	mpk_domain *d = mpk_domain_of(state);
	long before = *state;

	CHECK(d && !strcmp(mpk_domain_name(d), "guard:libguardtest.so"));
	CHECK(d && mpk_get(d) == MPK_READ);
	CHECK(g_add(3) == before + 3 && *state == before + 3);
	CHECK(g_apply(twice, 21) == 42 && *state == before + 103); /* a callback, out and back in */
	CHECK(d && mpk_get(d) == MPK_READ);
}

static void write_state(void *p)
{
	++*(volatile long *)p;
}

static void read_state(void *p)
{
	printf("%ld\n", *(volatile long *)p);
}

/* In a child: guarded with flags, then fn on the state. */
struct run {
	unsigned flags;
	void (*fn)(void *);
};
static void guard_then(void *arg)
{
	const struct run *r = arg;

	if (mpk_guard_library("libguardtest", r->flags))
		_exit(3);
	r->fn(g_ptr());
	fprintf(stderr, "state %ld\n", *g_ptr());
}

/* A child killed by mpkit's report of an access of the domain. */
static void killed(const struct t_child *c, const char *access)
{
	const char *code = t_backend() == MPK_BACKEND_HW ? "SEGV_PKUERR" : "SEGV_ACCERR";
	char line[256], dom[128];

	snprintf(line, sizeof(line),
		 "mpkit guard: caught a %s from outside libguardtest.so into its data: own+0x0 (libguardtest.so+0x",
		 access);
	snprintf(dom, sizeof(dom), "mpkit: protection fault: %s of domain \"guard:libguardtest.so\" at 0x", access);
	CHECK(c->signal == SIGABRT);
	const char *g = c->err ? strstr(c->err, line) : NULL, *m = c->err ? strstr(c->err, dom) : NULL;
	CHECK(g && m && g < m);
	CHECK(m && strstr(m, code));
	CHECK(!c->err || !strstr(c->err, "state "));
	if (t_failures && c->err)
		fprintf(stderr, "child's stderr:\n%s\n", c->err);
}

static void scenario(void)
{
	long *state;

	t_setenv("MPKIT_GUARD_HELPER", "/nonexistent/libmpkit-guard.so");
	fails("libguardtest", 0, ENOTSUP); /* no helper */
	helper();
	fails(NULL, 0, EINVAL);
	fails("", 0, EINVAL);
	fails("libguardtest", 1u << 7, EINVAL);
	fails("libguardtest", 0, ENOENT); /* not loaded yet */
	load();
	state = g_ptr();
	CHECK(mpk_domain_of(state) == NULL); /* the failures changed nothing */
	*state = 7;                          /* unguarded: the program writes it */
	CHECK(g_add(1) == 8);

	struct t_child c = t_child(guard_then, &(struct run){ MPK_GUARD_DENY_ALL, read_state }, T_CHILD_STDERR);
	killed(&c, "read");
	t_child_free(&c);
	c = t_child(guard_then, &(struct run){ MPK_GUARD_REPORT, write_state }, T_CHILD_STDERR | T_CHILD_EXIT);
	CHECK(c.exit_code == 0 && c.err && strstr(c.err, "state 9\n"));
	CHECK(c.err && strstr(c.err, "mpkit guard: libguardtest.so: 1 access from outside into its data, by 1 instruction\n"));
	CHECK(c.err && strstr(c.err, ", first of own+0x0 (libguardtest.so+0x"));
	if (t_failures && c.err)
		fprintf(stderr, "child's stderr:\n%s\n", c.err);
	t_child_free(&c);

	CHECK(mpk_guard_library("libguardtest", 0) == 0);
	still_guarded(state);
	fails("libguardtest", 0, EEXIST);
	fails("libguardtest.so", MPK_GUARD_DENY_ALL, EEXIST);
	fails("libc", 0, EBUSY);
	fails("libguardtest", 1u << 7, EINVAL);
	fails(NULL, 0, EINVAL);
	still_guarded(state);

	c = t_child(write_state, state, T_CHILD_STDERR);
	killed(&c, "write");
	t_child_free(&c);
	still_guarded(state);
}

int main(void)
{
	return t_both_backends(scenario);
}
