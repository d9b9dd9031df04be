/*
 * mpk_guard_library(): a program that links libmpkit.so guards libraries
 * it loaded (libguardtest.so, t_guard_cli's, and libguardtwo.so, which
 * calls it, t_guard_multi's) with no `mpkit guard`: the helper,
 * libmpkit-guard.so, opened by the first call.  Bad arguments first, each
 * -1 with its errno and nothing changed (ENOTSUP with no helper at
 * MPKIT_GUARD_HELPER, NULL, "", unknown flags, ENOENT for the library not
 * loaded yet, which is guarded afterwards).
 * Permission: once guarded, calls into the library work and write its
 * data, which the program reads; its rights outside stay MPK_READ.  Then
 * EEXIST (the same library again, by either name), ENOENT, EINVAL: nothing
 * changed, the library still works and is still guarded.  A second call
 * guards libguardtwo too, in a domain of its own with its own flags
 * (MPK_GUARD_DENY_ALL: MPK_NONE outside, while libguardtest's stays
 * MPK_READ), and a call from one into the other works; EEXIST for either
 * keeps each one's flags; six copies of libguardtest.so under other names
 * fill the 8 places, and a ninth library is ENOSPC, left unguarded, the
 * others as they were.  Protection: a write from the program (in a
 * child) into each library's data is killed by mpkit's report, after the
 * guard's line naming own+0x0 or two_state+0x0 and that library's domain
 * guard:FILE (SEGV_PKUERR and a key on hw, SEGV_ACCERR on soft); a read
 * of libguardtwo's is too; under MPK_GUARD_DENY_ALL a read is too; under
 * MPK_GUARD_REPORT the write goes through and the list at exit names it.
 * Two calls in a child with different flags: libguardtwo's under
 * MPK_GUARD_REPORT goes through, reported, libguardtest's (0) is killed
 * (the trap for the report is set up by the second call); libguardtwo's
 * under MPK_GUARD_DENY_ALL cannot be read where libguardtest's can.
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
static long (*g2_add)(long), (*g2_call)(long);
static long *(*g2_ptr)(void);

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

static void *sym(void *h, const char *name)
{
	void *f = dlsym(h, name);

	REQUIRE(f);
	return f;
}

static void load(void)
{
	void *h = dlopen("./libguardtest.so", RTLD_NOW), *h2 = dlopen("./libguardtwo.so", RTLD_NOW);
	REQUIRE(h && h2);
	*(void **)&g_add = sym(h, "g_add");
	*(void **)&g_apply = sym(h, "g_apply");
	*(void **)&g_ptr = sym(h, "g_ptr");
	*(void **)&g2_add = sym(h2, "g2_add");
	*(void **)&g2_call = sym(h2, "g2_call");
	*(void **)&g2_ptr = sym(h2, "g2_ptr");
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

/* p is in domain guard:FILE, with the rights outside. */
static void in_domain(const long *p, const char *file, int outside)
{
	mpk_domain *d = mpk_domain_of(p);
	char name[64];

	snprintf(name, sizeof(name), "guard:%s", file);
	CHECK(d && !strcmp(mpk_domain_name(d), name));
	CHECK(d && mpk_get(d) == outside);
}

/* The library works, and its data is the domain's, closed to writes. */
static void still_guarded(long *state)
{
	long before = *state;

	in_domain(state, "libguardtest.so", MPK_READ);
	CHECK(g_add(3) == before + 3 && *state == before + 3);
	CHECK(g_apply(twice, 21) == 42 && *state == before + 103); /* a callback, out and back in */
	in_domain(state, "libguardtest.so", MPK_READ);
}

/* libguardtwo too, closed even to reads (read through its calls), and
 * its call into libguardtest writes there. */
static void both_guarded(long *state, long *two)
{
	still_guarded(state);
	in_domain(two, "libguardtwo.so", MPK_NONE);
	long one = *state, was = g2_add(0);
	CHECK(g2_add(2) == was + 2);
	CHECK(g2_call(4) == (one + 4) * 1000 + was + 3 && *state == one + 4);
	in_domain(two, "libguardtwo.so", MPK_NONE);
	in_domain(state, "libguardtest.so", MPK_READ);
}

static void write_state(void *p)
{
	++*(volatile long *)p;
}

/* A write only (++ reads first: under MPK_GUARD_DENY_ALL the read faults). */
static void store_state(void *p)
{
	*(volatile long *)p = 42;
}

static void read_state(void *p)
{
	printf("%ld\n", *(volatile long *)p);
}

/* In a child: libguardtest guarded with flags, then fn on its state; or,
 * with two set, libguardtwo too, with flags2, then fn on libguardtwo's
 * state and a write of libguardtest's. */
struct run {
	unsigned flags;
	void (*fn)(void *);
	int two;
	unsigned flags2;
};
static void guard_then(void *arg)
{
	const struct run *r = arg;

	if (mpk_guard_library("libguardtest", r->flags) || (r->two && mpk_guard_library("libguardtwo", r->flags2)))
		_exit(3);
	if (!r->two) {
		r->fn(g_ptr());
		fprintf(stderr, "state %ld\n", *g_ptr());
		return;
	}
	fprintf(stderr, "one %ld\n", *g_ptr());
	long was = g2_add(0);
	r->fn(g2_ptr());
	fprintf(stderr, "two %+ld\n", g2_add(0) - was);
	write_state(g_ptr());
	fprintf(stderr, "state %ld\n", *g_ptr());
}

/* A child killed by mpkit's report of an access of file's domain, at
 * its symbol at. */
static void killed(const struct t_child *c, const char *access, const char *file, const char *at)
{
	const char *code = t_backend() == MPK_BACKEND_HW ? "SEGV_PKUERR" : "SEGV_ACCERR";
	char line[256], dom[128];

	snprintf(line, sizeof(line), "mpkit guard: caught a %s from outside %s into its data: %s+0x0 (%s+0x", access,
		 file, at, file);
	snprintf(dom, sizeof(dom), "mpkit: protection fault: %s of domain \"guard:%s\" at 0x", access, file);
	CHECK(c->signal == SIGABRT);
	const char *g = c->err ? strstr(c->err, line) : NULL, *m = c->err ? strstr(c->err, dom) : NULL;
	CHECK(g && m && g < m);
	CHECK(m && strstr(m, code));
	CHECK(!c->err || !strstr(c->err, "state "));
	if (t_failures && c->err)
		fprintf(stderr, "child's stderr:\n%s\n", c->err);
}

/* Six copies of libguardtest.so under names of their own guarded: the
 * 8 places taken; a seventh is ENOSPC and stays unguarded. */
static void fill(void)
{
	char dir[] = "/tmp/t_guard_api.XXXXXX", path[64], name[16];
	static char file[1 << 20];
	FILE *f = fopen("./libguardtest.so", "rb");

	REQUIRE(f && mkdtemp(dir));
	size_t len = fread(file, 1, sizeof(file), f);
	fclose(f);
	REQUIRE(len > 0 && len < sizeof(file));
	for (int i = 1; i <= 7; i++) {
		snprintf(name, sizeof(name), "libgcopy%d", i);
		snprintf(path, sizeof(path), "%s/%s.so", dir, name);
		FILE *o = fopen(path, "wb");
		REQUIRE(o && fwrite(file, 1, len, o) == len && !fclose(o));
		void *h = dlopen(path, RTLD_NOW);
		REQUIRE(h);
		long *(*ptr)(void);
		*(void **)&ptr = sym(h, "g_ptr");
		REQUIRE(ptr() != g_ptr());
		if (i < 7) {
			CHECK(mpk_guard_library(name, 0) == 0);
			snprintf(name, sizeof(name), "libgcopy%d.so", i);
			in_domain(ptr(), name, MPK_READ);
		} else {
			fails(name, 0, ENOSPC);
			CHECK(mpk_domain_of(ptr()) == NULL);
			*ptr() = 5; /* unguarded: the program writes it */
		}
		unlink(path);
	}
	rmdir(dir);
}

static void scenario(void)
{
	long *state, *two;

	t_setenv("MPKIT_GUARD_HELPER", "/nonexistent/libmpkit-guard.so");
	fails("libguardtest", 0, ENOTSUP); /* no helper */
	helper();
	fails(NULL, 0, EINVAL);
	fails("", 0, EINVAL);
	fails("libguardtest", 1u << 7, EINVAL);
	fails("libguardtest", 0, ENOENT); /* not loaded yet */
	load();
	state = g_ptr();
	two = g2_ptr();
	CHECK(mpk_domain_of(state) == NULL && mpk_domain_of(two) == NULL); /* the failures changed nothing */
	*state = 7;                          /* unguarded: the program writes it */
	CHECK(g_add(1) == 8);

	struct t_child c = t_child(guard_then, &(struct run){ MPK_GUARD_DENY_ALL, read_state, 0, 0 }, T_CHILD_STDERR);
	killed(&c, "read", "libguardtest.so", "own");
	t_child_free(&c);
	c = t_child(guard_then, &(struct run){ MPK_GUARD_REPORT, write_state, 0, 0 }, T_CHILD_STDERR | T_CHILD_EXIT);
	CHECK(c.exit_code == 0 && c.err && strstr(c.err, "state 9\n"));
	CHECK(c.err && strstr(c.err, "mpkit guard: libguardtest.so: 1 access from outside into its data, by 1 instruction\n"));
	CHECK(c.err && strstr(c.err, ", first of own+0x0 (libguardtest.so+0x"));
	if (t_failures && c.err)
		fprintf(stderr, "child's stderr:\n%s\n", c.err);
	t_child_free(&c);
	/* Two calls, each library its own flags: libguardtwo's write
	 * reported and let through, then libguardtest's caught. */
	c = t_child(guard_then, &(struct run){ 0, write_state, 1, MPK_GUARD_REPORT }, T_CHILD_STDERR);
	killed(&c, "write", "libguardtest.so", "own");
	CHECK(c.err && strstr(c.err, "one 8\n") && strstr(c.err, "two +1\n"));
	CHECK(c.err && strstr(c.err, "mpkit guard: write of two_state+0x0 (libguardtwo.so+0x"));
	t_child_free(&c);
	/* libguardtwo's under MPK_GUARD_DENY_ALL cannot be read;
	 * libguardtest's can. */
	c = t_child(guard_then, &(struct run){ 0, read_state, 1, MPK_GUARD_DENY_ALL }, T_CHILD_STDERR);
	killed(&c, "read", "libguardtwo.so", "two_state");
	CHECK(c.err && strstr(c.err, "one 8\n") && !strstr(c.err, "two "));
	t_child_free(&c);

	CHECK(mpk_guard_library("libguardtest", 0) == 0);
	still_guarded(state);
	fails("libguardtest", 0, EEXIST);
	fails("libguardtest.so", MPK_GUARD_DENY_ALL, EEXIST);
	fails("libguardnone", 0, ENOENT);
	fails("libguardtwo", 1u << 7, EINVAL);
	fails(NULL, 0, EINVAL);
	still_guarded(state);
	CHECK(mpk_domain_of(two) == NULL);

	CHECK(mpk_guard_library("libguardtwo", MPK_GUARD_DENY_ALL) == 0);
	both_guarded(state, two);
	fails("libguardtwo.so", 0, EEXIST);
	fails("libguardtest", MPK_GUARD_DENY_ALL, EEXIST);
	fails("libguardtwo", 1u << 7, EINVAL);
	both_guarded(state, two);
	fill();
	both_guarded(state, two);

	c = t_child(write_state, state, T_CHILD_STDERR);
	killed(&c, "write", "libguardtest.so", "own");
	t_child_free(&c);
	c = t_child(store_state, two, T_CHILD_STDERR);
	killed(&c, "write", "libguardtwo.so", "two_state");
	t_child_free(&c);
	c = t_child(read_state, two, T_CHILD_STDERR);
	killed(&c, "read", "libguardtwo.so", "two_state");
	t_child_free(&c);
	both_guarded(state, two);
}

int main(void)
{
	return t_both_backends(scenario);
}
