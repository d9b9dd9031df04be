/* SPDX-License-Identifier: MIT */
/*
 * A bad MPKIT_BACKEND, MPKIT_KEYS or MPKIT_HEAP_META makes the first
 * failing call print one line on stderr naming the variable, its value and
 * what it takes, and only once however many calls fail after it; mpk_info()
 * prints nothing but hands over the same line; good values print nothing.
 * (Before, a program only saw EINVAL from mpk_domain_create, and
 * MPKIT_HEAP_META=bogus passed mpk_init.)
 */
#include "t_env.h"

struct bad {
	const char *var, *value, *allowed; /* allowed NULL: a good value */
};

/* What a child runs: b's variable set, mpk_info() first or not. */
struct run {
	const struct bad *b;
	int info_first;
};

/* The child: the calls, with var=value (its stderr goes to the parent). */
static void calls(void *arg)
{
	const struct bad *b = ((const struct run *)arg)->b;

	unsetenv("MPKIT_BACKEND");
	unsetenv("MPKIT_KEYS");
	unsetenv("MPKIT_HEAP_META");
	if (b->var)
		setenv(b->var, b->value, 1);
	int isbad = b->allowed != NULL, expect = isbad ? -1 : 0;
	if (((const struct run *)arg)->info_first) {
		struct mpk_info in;
		int rc = mpk_info(&in);
		if (rc != expect || (isbad && (!in.error || !strstr(in.error, b->var))) ||
		    (!isbad && in.error))
			_exit(3);
		/* the parent sees that it printed nothing of its own:
		 * the one line comes from the calls below */
	}
	for (int i = 0; i < 3; i++) {
		mpk_domain *d = mpk_domain_create("msg", MPK_RW, 0);
		if (isbad ? d != NULL || errno != EINVAL : d == NULL)
			_exit(4);
		if (d)
			mpk_domain_destroy(d);
		if (mpk_init() != expect)
			_exit(5);
	}
}

/* Run the calls in a child with var=value; return what it printed on
 * stderr (static buffer). */
static const char *stderr_of(const struct bad *b, int info_first)
{
	static char out[4096];
	struct run r = { b, info_first };
	int st = t_child_stderr(calls, &r, out, sizeof(out));

	if (!WIFEXITED(st) || WEXITSTATUS(st))
		t_fail("%s=%s: child status %#x", t_show(b->var), t_show(b->value), st);
	return out;
}

static void check_line(const struct bad *b, const char *out)
{
	char want[128];

	/* exactly one line */
	const char *nl = strchr(out, '\n');
	if (!nl || nl[1])
		t_fail("%s=%s: want one line, got \"%s\"", b->var, b->value, out);
	snprintf(want, sizeof(want), "%s=\"%s\"", b->var, b->value);
	if (!strstr(out, want) || !strstr(out, b->allowed))
		t_fail("%s=%s: line \"%s\" lacks %s or \"%s\"", b->var, b->value, out, want, b->allowed);
}

int main(void)
{
	const struct bad bads[] = {
		{ "MPKIT_BACKEND", "bogus", "hw, soft or auto" },
		{ "MPKIT_BACKEND", "HW", "hw, soft or auto" },
		{ "MPKIT_KEYS", "99", "from 1 to 15" },
		{ "MPKIT_KEYS", "0", "from 1 to 15" },
		{ "MPKIT_HEAP_META", "bogus", "open, closed or auto" },
	};
	const struct bad good[] = {
		{ NULL, NULL, NULL },
		{ "MPKIT_BACKEND", "soft", NULL },
		{ "MPKIT_KEYS", "4", NULL },
		{ "MPKIT_HEAP_META", "closed", NULL },
	};

	for (size_t i = 0; i < sizeof(bads) / sizeof(*bads); i++) {
		check_line(&bads[i], stderr_of(&bads[i], 0));
		/* mpk_info() first: it says nothing; the next call says it */
		check_line(&bads[i], stderr_of(&bads[i], 1));
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
		const char *out = stderr_of(&good[i], 1);
		if (*out)
			t_fail("%s=%s: printed \"%s\"", t_show(good[i].var), t_show(good[i].value), out);
	}
	return t_done();
}
