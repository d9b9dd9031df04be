/* SPDX-License-Identifier: MIT */
/*
 * examples/pstore: 60 lives of a writer killed with SIGKILL at random
 * points, its stray writes firing between commits.  Guarded, every stray
 * write faults, no byte outside the committed records ever reaches the
 * file, and every record it reported committed is there with a good
 * checksum after each reopen; unguarded, the same stray writes damage the
 * file.
 */
#include "t_ex.h"

struct result {
	unsigned long lives, killed, commits, records, bad, fired, faulted, stray, dirty;
};

static void parse(const char *out, struct result *r)
{
	const char *p = strstr(out, "backend ");
	const char *q = strstr(out, "commits reported");
	const char *s = strstr(out, "stray writes fired");

	memset(r, 0xff, sizeof(*r));
	CHECK(p && sscanf(p, "backend %*s %lu lives, %lu ended", &r->lives, &r->killed) == 2);
	while (q && q > out && q[-1] != '\n')
		q--;
	CHECK(q && sscanf(q, "pstore: %lu commits reported, %lu records in the file at the end,"
			     " %lu bad", &r->commits, &r->records, &r->bad) == 3);
	while (s && s > out && s[-1] != '\n')
		s--;
	CHECK(s && sscanf(s, "pstore: %lu stray writes fired, %lu faulted; records or pages"
			     " with stray bytes %lu (summed over the reopens); reopens finding"
			     " damage %lu", &r->fired, &r->faulted, &r->stray, &r->dirty) == 4);
}

int main(void)
{
	char *out, *file = t_ex_tmp("pstore");
	char *guarded[] = { (char *)t_ex_path("pstore"), "--crashes", "60", "--seed", "3",
			    file, NULL };
	char *plain[] = { guarded[0], "--no-guard", "--crashes", "20", "--seed", "3", file,
			  NULL };
	struct result r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	t_backend();
	printf("== guarded\n");
	CHECK(t_ex_run(guarded, &out, NULL) == 0);
	parse(out, &r);
	CHECK(r.lives == 60 && r.killed >= 50); /* a few may fill the store first */
	CHECK(r.commits > 0 && r.records >= r.commits && r.bad == 0);
	CHECK(r.fired > 0 && r.stray == 0 && r.dirty == 0);
	/* A kill may fall between firing a stray write and reporting its
	 * fault, at most once a life. */
	CHECK(r.faulted <= r.fired && r.fired - r.faulted <= r.killed);
	printf("guarded: %lu crashes, %lu records committed and intact, %lu stray writes,"
	       " %lu faulted, 0 reached the file\n", r.killed, r.records, r.fired, r.faulted);
	free(out);

	printf("== not guarded (--no-guard)\n");
	CHECK(t_ex_run(plain, &out, NULL) == 1);
	parse(out, &r);
	CHECK(r.fired > 0 && r.faulted == 0 && r.dirty > 0 && r.stray > 0);
	free(out);
	unlink(file);
	free(file);
	return t_done();
}
