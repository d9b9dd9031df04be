/* SPDX-License-Identifier: MIT */
/*
 * examples/sqlite-guard: 2,000 wild writes into SQLite's memory during a
 * 6,000-statement workload.  Guarded, every one faults and is reported
 * (naming domain "sqlite"), integrity_check says ok and every row matches
 * the shadow copy; unguarded, the same writes corrupt the database or
 * crash the workload.
 */
#include "t_ex.h"

static long fired, faulted, rows, differ;
static char integrity[64];

static void parse(const char *out)
{
	const char *p = strstr(out, "statements, ");
	const char *q = strstr(out, "integrity_check: ");

	fired = faulted = rows = differ = -1;
	integrity[0] = 0;
	CHECK(p && sscanf(p, "statements, %ld wild writes fired, %ld faulted", &fired,
			  &faulted) == 2);
	if (q)
		sscanf(q, "integrity_check: %63[^;]; %ld rows, %ld differ", integrity, &rows,
		       &differ);
}

int main(void)
{
	char *out, *err;
	char *guarded[] = { (char *)t_ex_path("sqlite-guard"), "--ops", "6000", "--writes",
			    "2000", "--seed", "7", NULL };
	char *plain[] = { guarded[0], "--no-guard", "--ops", "6000", "--writes", "2000",
			  "--seed", "7", NULL };

	setvbuf(stdout, NULL, _IOLBF, 0);
	int hw = t_backend() == MPK_BACKEND_HW;

	printf("== guarded\n");
	CHECK(t_ex_run(guarded, &out, &err) == 0);
	parse(out);
	CHECK(fired == 2000 && faulted == fired);
	CHECK(!strcmp(integrity, "ok") && rows > 500 && differ == 0);
	CHECK(strstr(err, "write of domain \"sqlite\"") != NULL);
	CHECK(strstr(err, hw ? "SEGV_PKUERR" : "SEGV_ACCERR") != NULL);
	printf("guarded: %ld wild writes, %ld faulted and reported; integrity_check %s;"
	       " %ld rows, %ld differ\n", fired, faulted, integrity, rows, differ);
	free(out), free(err);

	printf("== not guarded (--no-guard)\n");
	int rc = t_ex_run(plain, &out, &err);
	CHECK(rc == 1 || rc == 2); /* corrupted, or crashed */
	if (rc == 1) {
		parse(out);
		CHECK(faulted == 0 && (strcmp(integrity, "ok") || differ > 0));
		printf("not guarded: %ld wild writes landed; integrity_check %s; %ld rows differ\n",
		       fired, integrity, differ);
	} else {
		printf("not guarded: the workload crashed\n");
	}
	free(out), free(err);
	return t_done();
}
