/* SPDX-License-Identifier: MIT */
/*
 * What the machine is (CPU, kernel, memory, THP), what a mapping really is
 * (/proc/self/smaps, read by the parser the library shares), and how long
 * the hw fast path is (objdump of the file this process runs it from).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mpkit.h"
#include "bench.h"
#include "procmaps.h"

static void trim(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = 0;
}

/* Whether the space-separated list holds word. */
static int has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = strstr(list, word); p; p = strstr(p + 1, word))
		if ((p == list || p[-1] == ' ' || p[-1] == '\t') && (p[n] == ' ' || p[n] == '\n' || !p[n]))
			return 1;
	return 0;
}

/* "always [madvise] never" -> "madvise" */
static void read_choice(const char *path, char *out, size_t len)
{
	char buf[256] = "";
	FILE *f = fopen(path, "r");

	snprintf(out, len, "unknown");
	if (!f)
		return;
	if (fgets(buf, sizeof(buf), f)) {
		char *a = strchr(buf, '['), *b = a ? strchr(a, ']') : NULL;
		if (a && b) {
			*b = 0;
			snprintf(out, len, "%s", a + 1);
		} else {
			trim(buf);
			snprintf(out, len, "%s", buf);
		}
	}
	fclose(f);
}

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	trim(buf);
	return 0;
}

/* DAMON contexts that run now: they age (and may reclaim) pages in the
 * background, which slows the page-table walks of the regions they sample. */
static void probe_damon(char *out, size_t len)
{
	const char *base = "/sys/kernel/mm/damon/admin/kdamonds";
	char path[256], buf[64];
	size_t n = 0;

	out[0] = 0;
	for (int k = 0; k < 8; k++) {
		snprintf(path, sizeof(path), "%s/%d/state", base, k);
		if (read_line(path, buf, sizeof(buf)) || strcmp(buf, "on"))
			continue;
		for (int c = 0; c < 4; c++) {
			char ops[32], act[200] = "";
			size_t an = 0;
			snprintf(path, sizeof(path), "%s/%d/contexts/%d/operations", base, k, c);
			if (read_line(path, ops, sizeof(ops)))
				continue;
			for (int sch = 0; sch < 8; sch++) {
				snprintf(path, sizeof(path), "%s/%d/contexts/%d/schemes/%d/action", base, k, c, sch);
				if (read_line(path, buf, sizeof(buf)) == 0 && an < sizeof(act))
					an += (size_t)snprintf(act + an, sizeof(act) - an, "%s%s", an ? "," : "", buf);
			}
			if (n < len)
				n += (size_t)snprintf(out + n, len - n, "%skdamond %d: %s, %s", n ? "; " : "", k, ops,
						      an ? act : "monitoring only");
		}
	}
}

void bench_machine_probe(struct bench_machine *m)
{
	char line[8192];
	struct utsname u;
	FILE *f;

	snprintf(m->cpu, sizeof(m->cpu), "unknown CPU");
	if ((f = fopen("/proc/cpuinfo", "r"))) {
		int got_model = 0, got_flags = 0;
		while ((!got_model || !got_flags) && fgets(line, sizeof(line), f)) {
			char *v = strchr(line, ':');
			if (!v)
				continue;
			v++;
			while (*v == ' ')
				v++;
			if (!got_model && !strncmp(line, "model name", 10)) {
				trim(v);
				snprintf(m->cpu, sizeof(m->cpu), "%s", v);
				got_model = 1;
			} else if (!got_flags && !strncmp(line, "flags", 5)) {
				m->hypervisor = has_word(v, "hypervisor");
				got_flags = 1;
			}
		}
		fclose(f);
	}
	m->emulated = strstr(m->cpu, "QEMU") || strstr(m->cpu, "TCG");
	m->ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);

	cpu_set_t set;
	m->cpus_allowed = 0;
	if (!sched_getaffinity(0, sizeof(set), &set)) {
		for (int c = 0; c < CPU_SETSIZE && m->cpus_allowed < 256; c++)
			if (CPU_ISSET(c, &set))
				m->cpu_list[m->cpus_allowed++] = c;
	}
	if (!m->cpus_allowed) {
		m->cpus_allowed = 1;
		m->cpu_list[0] = 0;
	}

	if (uname(&u) == 0)
		snprintf(m->kernel, sizeof(m->kernel), "Linux %s %s", u.release, u.machine);
	else
		snprintf(m->kernel, sizeof(m->kernel), "Linux (unknown)");

	if ((f = fopen("/proc/meminfo", "r"))) {
		unsigned long long kb;
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
				m->mem_total = (double)kb * 1024;
			else if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
				m->mem_avail = (double)kb * 1024;
		}
		fclose(f);
	}
	read_choice("/sys/kernel/mm/transparent_hugepage/enabled", m->thp_enabled, sizeof(m->thp_enabled));
	read_choice("/sys/kernel/mm/transparent_hugepage/defrag", m->thp_defrag, sizeof(m->thp_defrag));
	probe_damon(m->damon, sizeof(m->damon));
}

long bench_smaps_kb(const void *addr, size_t len, const char *field)
{
	uint64_t lo = (uintptr_t)addr, hi = lo + len;
	struct mpk_procmaps pm;
	struct mpk_procmaps_vma v;
	int found = 0;
	long sum = 0;

	if (mpk_procmaps_open(&pm, NULL, field))
		return -1;
	while (mpk_procmaps_next(&pm, &v) > 0 && v.lo < hi)
		if (v.hi > lo && v.field >= 0) {
			sum += (long)v.field;
			found = 1;
		}
	mpk_procmaps_close(&pm);
	return found ? sum : -1;
}

long bench_vma_kb(const void *addr, int *named)
{
	uint64_t x = (uintptr_t)addr;
	struct mpk_procmaps pm;
	struct mpk_procmaps_vma v;
	long kb = -1;

	*named = 0;
	if (mpk_procmaps_open(&pm, NULL, NULL))
		return -1;
	while (mpk_procmaps_next(&pm, &v) > 0)
		if (v.lo <= x && x < v.hi) {
			kb = (long)((v.hi - v.lo) / 1024);
			*named = strstr(v.path, "[anon:") != NULL;
			break;
		}
	mpk_procmaps_close(&pm);
	return kb;
}

/* ---------------------------------------------------------------- objdump */

struct insn {
	unsigned long addr;
	char text[96]; /* "mov    %esi,%r8d" */
};

struct fn {
	const char *name;
	struct insn *v;
	int n, cap;
};

static int find_in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[4096];

	if (!path)
		path = "/usr/bin:/bin";
	while (*path) {
		const char *e = strchr(path, ':');
		size_t n = e ? (size_t)(e - path) : strlen(path);
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, prog);
		if (n && access(buf, X_OK) == 0)
			return 1;
		path += n + (e ? 1 : 0);
	}
	return 0;
}

/* The mnemonic of an instruction, after any prefixes (lock, rep, bnd, notrack). */
static const char *mnemonic(const char *text, int *locked)
{
	static const char *prefixes[] = { "lock ", "rep ", "repz ", "repnz ", "repe ", "repne ", "bnd ",
					  "notrack ", "data16 ", "cs ", "ds " };
	int again = 1;
	while (again) {
		again = 0;
		for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
			size_t n = strlen(prefixes[i]);
			if (!strncmp(text, prefixes[i], n)) {
				if (i == 0 && locked)
					*locked = 1;
				text += n;
				while (*text == ' ')
					text++;
				again = 1;
			}
		}
	}
	return text;
}

static int is(const char *mn, const char *word)
{
	size_t n = strlen(word);
	return !strncmp(mn, word, n) && (mn[n] == ' ' || mn[n] == 0 || mn[n] == '\t');
}

/* Walk the straight line from the entry: conditional branches fall
 * through, unconditional jumps inside the function are followed, and the
 * walk ends at the first ret (or a jump out: a tail call). */
static void walk(const struct fn *fn, int *out_insns, int *rd, int *wr, int *br, int *calls, int *sys, int *lk)
{
	int i = 0, steps = 0;

	*out_insns = *rd = *wr = *br = *calls = *sys = *lk = 0;
	while (i >= 0 && i < fn->n && steps++ < 1000) {
		int locked = 0;
		const char *mn = mnemonic(fn->v[i].text, &locked);
		(*out_insns)++;
		*lk += locked;
		if (is(mn, "ret") || is(mn, "retq"))
			return;
		if (is(mn, "rdpkru"))
			(*rd)++;
		else if (is(mn, "wrpkru"))
			(*wr)++;
		else if (is(mn, "syscall") || is(mn, "sysenter") || is(mn, "int"))
			(*sys)++;
		else if (is(mn, "call") || is(mn, "callq"))
			(*calls)++;
		else if (is(mn, "jmp") || is(mn, "jmpq")) {
			unsigned long target = strtoul(mn + 3 + (mn[3] == 'q'), NULL, 16);
			int j;
			for (j = 0; j < fn->n && fn->v[j].addr != target; j++)
				;
			if (j == fn->n)
				return; /* leaves the function */
			i = j;
			continue;
		} else if (mn[0] == 'j') {
			(*br)++;
		}
		i++;
	}
}

/* Starts objdump -d of exe's addresses [lo, hi) (*pid to reap): the end
 * of the pipe its output comes from, or -1 with why. */
static int objdump(const char *exe, unsigned long lo, unsigned long hi, pid_t *pid, char *why, size_t len)
{
	char from[64], to[64];
	int fds[2];

	if (!find_in_path("objdump")) {
		snprintf(why, len, "objdump not found (install binutils to see it)");
		return -1;
	}
	snprintf(from, sizeof(from), "--start-address=0x%lx", lo);
	snprintf(to, sizeof(to), "--stop-address=0x%lx", hi);
	if (pipe(fds)) {
		snprintf(why, len, "pipe: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	*pid = fork();
	if (*pid < 0) {
		close(fds[0]);
		close(fds[1]);
		snprintf(why, len, "fork: %s", strerror(errno));
		return -1;
	}
	if (*pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(fds[1], 1);
		if (null >= 0)
			dup2(null, 2);
		close(fds[0]);
		close(fds[1]);
		setenv("LC_ALL", "C", 1);
		execlp("objdump", "objdump", "-d", "--no-show-raw-insn", from, to, exe, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	return fds[0];
}

/* An instruction line of objdump's ("  4011a6:\tmov    %esi,%r8d") into
 * fn; 0, or -1 when out of memory. */
static int add_insn(struct fn *fn, unsigned long addr, char *t)
{
	while (*t == ' ' || *t == '\t')
		t++;
	trim(t);
	if (!*t)
		return 0;
	if (fn->n == fn->cap) {
		int cap = fn->cap ? 2 * fn->cap : 64;
		struct insn *v = realloc(fn->v, (size_t)cap * sizeof(*v));
		if (!v)
			return -1;
		fn->v = v;
		fn->cap = cap;
	}
	fn->v[fn->n].addr = addr;
	/* collapse the tab between mnemonic and operands */
	for (char *p = t; *p; p++)
		if (*p == '\t')
			*p = ' ';
	snprintf(fn->v[fn->n].text, sizeof(fn->v[fn->n].text), "%s", t);
	fn->n++;
	return 0;
}

/* The instructions of fns[0..3), each in its extent [lo[i], hi[i]) (an
 * empty one: not looked for).  By address, not by label: a stripped file
 * has no labels. */
static void read_functions(FILE *f, struct fn *fns, const unsigned long *lo, const unsigned long *hi)
{
	char line[1024];

	while (fgets(line, sizeof(line), f)) {
		unsigned long addr;
		struct fn *cur = NULL;
		char *colon = strchr(line, ':');
		/* "  1234:\tmov ..." (labels start in the first column) */
		if (line[0] != ' ' || !colon || sscanf(line, " %lx:", &addr) != 1)
			continue;
		for (int i = 0; i < 3; i++)
			if (addr >= lo[i] && addr < hi[i])
				cur = &fns[i];
		if (cur && add_insn(cur, addr, colon + 1))
			break;
	}
}

/* The file mpk_set, mpk_enter and mpk_leave were loaded from in this
 * process (libmpkit.so.0, or the program linked with libmpkit.a), their
 * extents in it (extent.c: stripped files too), and objdump -d of the
 * part of the file that holds them. */
void bench_fastpath_probe(struct bench_fastpath *fp, const char *label)
{
	static const char *names[3] = { "mpk_set", "mpk_enter", "mpk_leave" };
	const void *addrs[3] = { (const void *)mpk_set, (const void *)mpk_enter, (const void *)mpk_leave };
	struct fn fns[3] = { { names[0], 0, 0, 0 }, { names[1], 0, 0, 0 }, { names[2], 0, 0, 0 } };
	unsigned long lo[3] = { 0 }, hi[3] = { 0 }, first = ~0UL, last = 0;
	char path[4096], other[4096];
	int where = 0;
	pid_t pid;

	memset(fp, 0, sizeof(*fp));
	for (int i = 0; i < 3; i++) {
		fp->fn[i].name = names[i];
		if (bench_fn_extent(addrs[i], where ? other : path, sizeof(path), &lo[i], &hi[i]) ||
		    (where && strcmp(path, other))) {
			hi[i] = 0; /* not found, or in another file */
			continue;
		}
		where = 1;
		first = lo[i] < first ? lo[i] : first;
		last = hi[i] > last ? hi[i] : last;
	}
	if (!where) {
		snprintf(fp->why, sizeof(fp->why), "neither the dynamic symbols nor the unwind table of "
			 "this process say where mpk_set is");
		return;
	}
	snprintf(fp->file, sizeof(fp->file), "%.200s", label ? label : path);
	int fd = objdump(path, first, last, &pid, fp->why, sizeof(fp->why));
	if (fd < 0)
		return;
	FILE *f = fdopen(fd, "r");
	if (f) {
		read_functions(f, fns, lo, hi);
		fclose(f);
	} else {
		close(fd);
	}
	int st;
	waitpid(pid, &st, 0);
	int found = 0;
	for (int i = 0; i < 3; i++) {
		if (!fns[i].n)
			continue;
		fp->fn[i].found = 1;
		found++;
		walk(&fns[i], &fp->fn[i].insns, &fp->fn[i].rdpkru, &fp->fn[i].wrpkru, &fp->fn[i].branches,
		     &fp->fn[i].calls, &fp->fn[i].syscalls, &fp->fn[i].locked);
		free(fns[i].v);
	}
	if (!found)
		snprintf(fp->why, sizeof(fp->why), "objdump showed no instruction of mpk_set/mpk_enter/mpk_leave in %.120s",
			 fp->file);
	fp->ok = found > 0;
}
