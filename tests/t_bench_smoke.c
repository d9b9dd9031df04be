/*
 * The benchmark engine runs, end to end, at tiny sizes: every method that
 * can run here sets up its region, proves that closing it makes it fault
 * and re-opening it gives it back (contents kept), and is sampled; the
 * reports (table, CSV, JSON, SVG) are written.  In the VM this runs the hw
 * rows on real keys: closing must fault with SEGV_PKUERR there.
 *
 * Not a timing test: no number measured here is compared with anything.
 * The engine forks one process per backend, so this test makes no mpkit
 * call of its own before bench_run().
 */
#include "t.h"
#include "t_env.h"
#include "bench.h"

static long file_size(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fclose(f);
	return n;
}

static int file_has(const char *path, const char *what)
{
	static char buf[1 << 16];
	return t_read_file(path, buf, sizeof(buf)) && strstr(buf, what) != NULL;
}

int main(void)
{
	struct bench_config cfg;
	int keys = t_machine_has_keys();

	bench_config_defaults(&cfg);
	cfg.sizes[0] = 4 << 10;
	cfg.sizes[1] = 64 << 10;
	cfg.nsizes = 2;
	cfg.threads[0] = 0;
	cfg.threads[1] = 1;
	cfg.nthreads = 2;
	cfg.reps = 2;
	cfg.sample_ns = 0; /* one iteration per sample */
	cfg.quiet = 1;
	cfg.smoke = 1;

	struct bench_results *r = bench_run(&cfg);
	REQUIRE(r);
	for (int g = 0; g < 2; g++)
		if (r->group_error[g][0])
			t_fail("%s backend: %s", g == BG_HW ? "hw" : "soft", r->group_error[g]);
	CHECK(r->machine.hw_available == keys);

	for (int m = 0; m < BM_COUNT; m++) {
		const struct bench_method_info *mi = &bench_methods[m];
		for (int s = 0; s < cfg.nsizes; s++) {
			const struct bench_setup *st = bench_setup(r, m, s);
			if (mi->group == BG_HW && !keys) {
				CHECK(st->status == BS_NA);
				CHECK(!strcmp(st->why, "not available on this CPU") || r->machine.cpu_pku);
				continue;
			}
			if (mi->thp) { /* 4 KiB and 64 KiB are below a huge page */
				CHECK(st->status == BS_NA);
				continue;
			}
			if (m == BM_SODIUM && !r->machine.sodium_version[0]) {
				CHECK(st->status == BS_NA);
				continue;
			}
			if (st->status != BS_OK) {
				t_fail("%s at %zu bytes: status %d: %s", mi->label, cfg.sizes[s], st->status, st->why);
				continue;
			}
			/* The switch really protects: a read of the closed region
			 * faulted, the right way for the backend. */
			CHECK(st->verified);
			if (mi->group == BG_HW)
				CHECK(st->fault_code == SEGV_PKUERR);
			else
				CHECK(st->fault_code == SEGV_ACCERR);
			for (int t = 0; t < cfg.nthreads; t++) {
				const struct bench_cell *c = bench_cell(r, m, s, t);
				CHECK(c->status == BS_OK);
				CHECK(c->n == cfg.reps);
				for (int i = 0; i < c->n; i++)
					CHECK(c->sw[i] > 0 && c->touch[i] >= 0 && c->base[i] >= 0);
				if (mi->backend_row)
					CHECK(c->s_raw.median > 0);
			}
		}
	}
	/* Unchanged rights cost no system call, on each backend that ran. */
	CHECK(r->nochange[BG_SOFT].status == BS_OK);
	CHECK(r->nochange[BG_SOFT].calls > 0 && r->nochange[BG_SOFT].mprotects == 0);
	if (keys) {
		CHECK(r->nochange[BG_HW].status == BS_OK);
		CHECK(r->nochange[BG_HW].mprotects == 0);
	}

	/* The reports.  The fast-path count needs objdump, absent in the VM. */
	char dir[] = "/tmp/mpkit-bench-smoke.XXXXXX", csv[64], json[64], gsvg[64], txt[64], msg[2048];
	REQUIRE(mkdtemp(dir));
	snprintf(csv, sizeof(csv), "%s/r.csv", dir);
	snprintf(json, sizeof(json), "%s/r.json", dir);
	snprintf(gsvg, sizeof(gsvg), "%s/g.svg", dir);
	snprintf(txt, sizeof(txt), "%s/r.txt", dir);
	FILE *f = fopen(txt, "w");
	REQUIRE(f);
	bench_print(f, r);
	fclose(f);
	FILE *fc = fopen(csv, "w"), *fj = fopen(json, "w");
	REQUIRE(fc && fj);
	CHECK(bench_write_csv(fc, r) == 0);
	CHECK(bench_write_json(fj, r) == 0);
	CHECK(fclose(fc) == 0 && fclose(fj) == 0);
	/* a write error is reported (not a silent short file) */
	FILE *full = fopen("/dev/full", "w");
	if (full) {
		CHECK(bench_write_json(full, r) == -1);
		fclose(full);
	}
	CHECK(file_has(txt, "timings below mean nothing"));
	CHECK(file_has(txt, keys ? "mpkit hw: set NONE + set RW" : "not available on this CPU"));
	CHECK(file_size(csv) > 100 && file_has(csv, "soft_set"));
	CHECK(file_has(json, "\"results\"") && file_has(json, "\"smoke\": true"));
	/* gnuplot where it is usable (not in the VM: there the plot is
	 * left out, as --plot would say before the run) */
	struct bench_gnuplot g;
	if (!bench_gnuplot_find(&g)) {
		CHECK(bench_plot(gsvg, r, &g, msg, sizeof(msg)) == 0);
		CHECK(strstr(msg, "drawn with gnuplot") != NULL);
		CHECK(file_size(gsvg) > 1000 && file_has(gsvg, "<svg")); /* may exceed file_has's 64 KiB */
		printf("plot: %s\n", msg);
	} else {
		CHECK(g.why[0] != 0);
		printf("plot: not drawn: %s\n", g.why);
	}
	if (r->fastpath.ok)
		CHECK(r->fastpath.fn[0].found && r->fastpath.fn[0].insns > 0 && r->fastpath.fn[0].wrpkru == 1);

	bench_print(stdout, r);
	unlink(csv);
	unlink(json);
	unlink(gsvg);
	unlink(txt);
	rmdir(dir);
	bench_free(r);
	return t_done();
}
