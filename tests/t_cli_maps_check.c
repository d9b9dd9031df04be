/* SPDX-License-Identifier: MIT */
/*
 * `mpkit maps PID --check` finds in another process what mpk_audit() finds
 * in its own: a child with two domains is checked untouched (exit 0, no
 * mismatch, also after it made one domain read-only: on soft the expected
 * protection follows), then after it mapped over a closed region
 * (MAP_FIXED), moved one away (mremap), made a page inaccessible
 * (mprotect) and, on hw, gave a
 * page key 0 (pkey_mprotect): exit 1, one line per range naming it, its
 * domain, what was expected and what was found.  Bad arguments exit 2.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/syscall.h>

#include "t_cli.h"
#include "t_state.h"

#ifndef SYS_pkey_mprotect
#define SYS_pkey_mprotect 329
#endif

struct where {
	char *a, *s, *m;
	int ko, ks;
};

static int to_child[2], from_child[2];

static void child(void)
{
	size_t pg = t_page();
	int hw = t_backend() == MPK_BACKEND_HW;
	struct where w;
	char c;

	/* The ptrace rules (Yama) let only ancestors read /proc/PID/mem. */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	mpk_domain *open = mpk_domain_create("check-open", MPK_RW, 0);
	mpk_domain *shut = mpk_domain_create("check-shut", MPK_NONE, 0);
	if (!open || !shut)
		_exit(3);
	w.a = mpk_alloc(open, 4 * pg);
	w.s = mpk_alloc(shut, 2 * pg);
	w.m = mpk_alloc(shut, 2 * pg);
	w.ko = hw ? mpk_domain_key(open) : 0;
	w.ks = hw ? mpk_domain_key(shut) : 0;
	if (mpk_set(open, MPK_READ))
		_exit(3);
	if (!w.a || !w.s || !w.m || write(from_child[1], &w, sizeof(w)) != sizeof(w))
		_exit(3);
	if (read(to_child[0], &c, 1) != 1) /* checked untouched */
		_exit(3);
	char *to = mmap(NULL, 2 * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mmap(w.s + pg, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != w.s + pg ||
	    to == MAP_FAILED || mremap(w.m, 2 * pg, 2 * pg, MREMAP_MAYMOVE | MREMAP_FIXED, to) != to ||
	    mprotect(w.a + 2 * pg, pg, PROT_NONE) ||
	    (hw && syscall(SYS_pkey_mprotect, w.a, pg, PROT_READ | PROT_WRITE, 0)))
		_exit(4);
	if (write(from_child[1], "t", 1) != 1)
		_exit(3);
	/* until the parent has checked */
	if (read(to_child[0], &c, 1) < 0)
		_exit(3);
	_exit(0);
}

/* The line of out that starts with the range [p, p+len) names domain. */
static void check_line(const struct t_cli *r, const void *p, size_t len, const char *domain, const char *found)
{
	char range[64];
	snprintf(range, sizeof(range), "%p-%p ", p, (const char *)p + len);
	const char *l = strstr(r->out, range);
	if (!l) {
		t_fail("no line for %s in:\n%s", range, r->out);
		return;
	}
	const char *eol = strchr(l, '\n');
	size_t n = eol ? (size_t)(eol - l) : strlen(l);
	char line[512];
	snprintf(line, sizeof(line), "%.*s", (int)n, l);
	if (!strstr(line, domain) || !strstr(line, found) || !strstr(line, "expected"))
		t_fail("want domain %s, found '%s' in: %s", domain, found, line);
}

static void scenario(void)
{
	size_t pg = t_page();
	int hw = t_backend() == MPK_BACKEND_HW;
	struct t_cli r;
	struct where w;
	char pid[16], c;

	REQUIRE(pipe(to_child) == 0 && pipe(from_child) == 0);
	fflush(NULL);
	/* Its own fork, not t_child(): the child lives on while mpkit maps inspects it. */
	pid_t kid = fork();
	REQUIRE(kid >= 0);
	if (kid == 0)
		child();
	snprintf(pid, sizeof(pid), "%d", (int)kid);
	REQUIRE(read(from_child[0], &w, sizeof(w)) == sizeof(w));

	t_cli_run(&r, NULL, (const char *[]){ "maps", pid, "--check", NULL });
	CHECK(r.status == 0);
	/* under the drop-in, its heap's regions are checked too */
	CHECK(strstr(r.out, t_dropin_loaded() ? " regions checked, 0 mismatches" : "3 regions checked, 0 mismatches"));
	if (r.status != 0)
		printf("%s%s", r.out, r.err);

	REQUIRE(write(to_child[1], "g", 1) == 1);
	REQUIRE(read(from_child[0], &c, 1) == 1);
	t_cli_run(&r, NULL, (const char *[]){ "maps", pid, "--check", NULL });
	printf("%s", r.out);
	CHECK(r.status == 1);
	CHECK(strstr(r.out, hw ? "4 mismatches" : "3 mismatches") != NULL);
	check_line(&r, w.s + pg, pg, "\"check-shut\"", "found rw-");
	check_line(&r, w.m, 2 * pg, "\"check-shut\"", "found nothing mapped");
	char found[32];
	snprintf(found, sizeof(found), hw ? "found --- key %d" : "found ---", w.ko);
	check_line(&r, w.a + 2 * pg, pg, "\"check-open\"", found);
	if (hw) {
		char want[64];
		snprintf(want, sizeof(want), "expected rw- key %d, found rw- key 0", w.ko);
		check_line(&r, w.a, pg, "\"check-open\"", want);
		snprintf(want, sizeof(want), "expected rw- key %d, found rw- key 0", w.ks);
		check_line(&r, w.s + pg, pg, "\"check-shut\"", want);
	} else {
		check_line(&r, w.s + pg, pg, "\"check-shut\"", "expected --- ");
	}
	/* untouched pages are not reported */
	snprintf(found, sizeof(found), "%p-", (void *)w.s);
	CHECK(strstr(r.out, found) == NULL);

	REQUIRE(write(to_child[1], "q", 1) == 1);
	int st;
	REQUIRE(waitpid(kid, &st, 0) == kid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(to_child[0]), close(to_child[1]), close(from_child[0]), close(from_child[1]);

	/* bad arguments, and a process with nothing of mpkit's */
	t_cli_run(&r, NULL, (const char *[]){ "maps", "--check", NULL });
	CHECK(r.status == 2);
	t_cli_run(&r, NULL, (const char *[]){ "maps", pid, "--check", "--json", NULL });
	CHECK(r.status == 2);
	t_cli_run(&r, NULL, (const char *[]){ "maps", "self", "--check", NULL });
	CHECK(r.status == 0 && strstr(r.out, t_dropin_loaded() ? ", 0 mismatches" : "nothing to check"));
	/* the child is gone: its maps cannot be read */
	t_cli_run(&r, NULL, (const char *[]){ "maps", pid, "--check", NULL });
	CHECK(r.status == 2);
	t_cli_run(&r, "/dev/full", (const char *[]){ "maps", "self", "--check", NULL });
	CHECK(r.status == 2);
}

int main(void)
{
	return t_both_backends(scenario);
}
