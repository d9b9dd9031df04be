/* SPDX-License-Identifier: MIT */
#include "t_snap.h"

long t_snap_read(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;
	ssize_t r;

	if (fd < 0)
		return -1;
	while (n + 1 < size && (r = read(fd, buf + n, size - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	REQUIRE(n + 1 < size); /* the buffer was big enough */
	buf[n] = 0;
	return (long)n;
}

int t_snap_entries(const char *path)
{
	static char buf[16384];
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), n = 0;
	long r;

	REQUIRE(fd >= 0);
	while ((r = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
		for (long off = 0; off < r;) {
			struct {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char d_name[];
			} *e = (void *)(buf + off);
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				n++;
			off += e->reclen;
		}
	close(fd);
	return n;
}

int t_snap_field(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	return p ? atoi(p + strlen(key)) : -1;
}

void t_snap_settle(int n)
{
	static char status[8192];

	for (int i = 0; i < 200; i++) {
		REQUIRE(t_snap_read("/proc/self/status", status, sizeof(status)) > 0);
		if (t_snap_field(status, "\nThreads:") == n)
			return;
		usleep(10000);
	}
	t_fail("the process still has %d threads, not %d", t_snap_field(status, "\nThreads:"), n);
}

void t_snap_gone(pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d", (int)tid);
	for (int i = 0; i < 200 && !access(path, F_OK); i++)
		usleep(10000);
}

void t_snap_maps(struct t_snap *s)
{
	static char buf[32 << 20];
	char *line, *next;

	REQUIRE(t_snap_read("/proc/self/smaps", buf, sizeof(buf)) >= 0);
	s->nvma = 0;
	for (line = buf; *line; line = next) {
		next = strchr(line, '\n');
		next = next ? next + 1 : line + strlen(line);
		struct t_vma v = { .pkey = -1 };
		int pos = 0;
		if (sscanf(line, "%lx-%lx %4s %*s %*s %*s%n", &v.lo, &v.hi, v.perms, &pos) >= 3 &&
		    line[pos] != ':') {
			const char *nm = line + pos + strspn(line + pos, " ");
			size_t len = strcspn(nm, "\n");
			if (len >= sizeof(v.name))
				len = sizeof(v.name) - 1;
			memcpy(v.name, nm, len);
			REQUIRE(s->nvma < T_SNAP_MAPS);
			s->vma[s->nvma++] = v;
		} else if (s->nvma && !strncmp(line, "ProtectionKey:", 14)) {
			s->vma[s->nvma - 1].pkey = atoi(line + 14);
		} else if (s->nvma && !strncmp(line, "VmFlags:", 8)) {
			size_t len = strcspn(line, "\n");
			for (const char *f = line + 8; f + 2 <= line + len; f += 3)
				if (f[0] == ' ' && f[1] == 'd' && f[2] == 'd')
					s->vma[s->nvma - 1].dd = true;
		}
	}
	/* Neighbours alike are one range: whether the kernel merged them
	 * (an mprotect() and its undo may) is not the process's state. */
	int n = 0;
	for (int i = 0; i < s->nvma; i++) {
		struct t_vma *v = &s->vma[i], *last = n ? &s->vma[n - 1] : NULL;
		if (last && last->hi == v->lo && last->pkey == v->pkey && last->dd == v->dd &&
		    !strcmp(last->perms, v->perms) && !strcmp(last->name, v->name))
			last->hi = v->hi;
		else
			s->vma[n++] = *v;
	}
	s->nvma = n;
}

void t_snap_take(struct t_snap *s)
{
	static char status[8192];
	int saved = errno;

	memset(s, 0, sizeof(*s));
	s->info_rc = mpk_info(&s->info);
	REQUIRE(mpk_stats_get(&s->stats) == 0);
	s->lockdown = mpk_lockdown_flags();
	for (int sig = 1; sig <= SIGRTMAX && sig < 65; sig++)
		s->sa_ok[sig] = sigaction(sig, NULL, &s->sa[sig]) == 0;
	s->fds = t_snap_entries("/proc/self/fd");
	REQUIRE(t_snap_read("/proc/self/status", status, sizeof(status)) > 0);
	s->threads = t_snap_field(status, "\nThreads:");
	s->nnp = t_snap_field(status, "\nNoNewPrivs:");
	s->seccomp = t_snap_field(status, "\nSeccomp:");
	s->filters = t_snap_field(status, "\nSeccomp_filters:");
	s->dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
	t_snap_maps(s);
	errno = saved;
}

bool t_snap_vma_moves(const struct t_vma *v)
{
	/* A sanitizer's allocator is malloc here: its space (x86-64) fills
	 * as it likes. */
#if defined(__SANITIZE_ADDRESS__)
	if (v->lo >= 0x600000000000ul && v->hi <= 0x640000000000ul)
		return true;
#endif
#if defined(__SANITIZE_THREAD__)
	if (v->lo >= 0x7b0000000000ul && v->hi <= 0x7c0000000000ul)
		return true;
	/* ... and its runtime maps memory of its own, nameless, anywhere. */
	if (!v->name[0] && !strcmp(v->perms, "rw-p") && v->pkey <= 0)
		return true;
#endif
	/* So does the drop-in allocator's heap (make check-malloc): the
	 * window its blocks are in, which is mpkit's (16 GiB, aligned), not
	 * the test's mpkit: another copy of it. */
	static int dropin = -1;
	static uintptr_t unit;
	if (dropin < 0) {
		void *volatile p = malloc(1);
		unit = (uintptr_t)p >> 34;
		free(p);
		dropin = t_dropin_loaded();
	}
	if (dropin && v->lo >> 34 == unit && (v->hi - 1) >> 34 == unit)
		return true;
	return !strcmp(v->name, "[stack]") || !strcmp(v->name, "[heap]") ||
	       strstr(v->name, "/libgcc_s.so");
}

void t_snap_vma_print(const char *how, const struct t_vma *v)
{
	fprintf(stderr, "    %s %lx-%lx %s key %d%s %s\n", how, v->lo, v->hi, v->perms, v->pkey,
		v->dd ? " dd" : "", v->name);
}

bool t_snap_vma_same(const struct t_vma *a, const struct t_vma *b)
{
	return a->lo == b->lo && a->hi == b->hi && !strcmp(a->perms, b->perms) &&
	       a->pkey == b->pkey && a->dd == b->dd && !strcmp(a->name, b->name);
}

int t_snap_maps_diff(const struct t_snap *a, const struct t_snap *b)
{
	int i = 0, j = 0, n = 0;

	for (;;) {
		while (i < a->nvma && t_snap_vma_moves(&a->vma[i]))
			i++;
		while (j < b->nvma && t_snap_vma_moves(&b->vma[j]))
			j++;
		if (i == a->nvma && j == b->nvma)
			return n;
		if (i < a->nvma && j < b->nvma && t_snap_vma_same(&a->vma[i], &b->vma[j])) {
			i++, j++;
			continue;
		}
		n++;
		/* Sorted by address: the lower one is the odd one out. */
		if (j == b->nvma || (i < a->nvma && a->vma[i].lo <= b->vma[j].lo)) {
			t_snap_vma_print("before:", &a->vma[i++]);
			if (j < b->nvma && b->vma[j].lo == a->vma[i - 1].lo)
				t_snap_vma_print("after: ", &b->vma[j++]);
		} else {
			t_snap_vma_print("after: ", &b->vma[j++]);
		}
	}
}

void t_snap_check(const struct t_snap *a, const struct t_snap *b, unsigned flags,
				const char *what)
{
	T_SNAP_INT(what, info_rc);
	T_SNAP_INT(what, info.backend);
	T_SNAP_INT(what, info.domains);
	T_SNAP_INT(what, info.keys_in_use);
	T_SNAP_INT(what, info.keys_free);
	T_SNAP_INT(what, info.key_budget);
	T_SNAP_INT(what, info.exec_only);
	T_SNAP_INT(what, info.pkru_valid);
	/* The caller's rights key by key: AD means no access whatever WD
	 * says (the kernel's default for a key is AD alone, mpkit's closed
	 * is AD and WD: both are closed). */
	for (int k = 0; k < 16 && a->info.pkru_valid; k++) {
		unsigned x = a->info.pkru >> 2 * k & 3, y = b->info.pkru >> 2 * k & 3;
		if ((x & 1 ? 1 : x) != (y & 1 ? 1 : y))
			t_fail("%s: the rights of key %d changed (PKRU %#x, is %#x)", what, k,
			       a->info.pkru, b->info.pkru);
	}
	T_SNAP_INT(what, stats.faults_reported);
	if (!(flags & T_SNAP_WORK)) {
		T_SNAP_INT(what, stats.mprotect_calls);
		T_SNAP_INT(what, stats.broadcasts);
	}
	T_SNAP_INT(what, lockdown);
	for (int sig = 1; sig < 65; sig++) {
		const struct sigaction *x = &a->sa[sig], *y = &b->sa[sig];
		bool same = a->sa_ok[sig] == b->sa_ok[sig];
		if (same && a->sa_ok[sig]) {
			/* libc adds SA_RESTORER to every action it sets: for
			 * SIG_DFL put back it means nothing. */
			same = x->sa_handler == y->sa_handler &&
			       (x->sa_flags | SA_RESTORER) == (y->sa_flags | SA_RESTORER);
			/* The kernel's mask is 64 signals; libc may leave the
			 * rest of a sigset_t read back as it finds it.  No
			 * handler runs for SIG_DFL or SIG_IGN: no mask either
			 * (TSan reads back the full one it sets). */
			bool runs = x->sa_handler != SIG_DFL && x->sa_handler != SIG_IGN;
			for (int m = 1; m < 65 && same && runs; m++)
				same = sigismember(&x->sa_mask, m) == sigismember(&y->sa_mask, m);
		}
		if (!same)
			t_fail("%s: the action of signal %d (%s) changed", what, sig, strsignal(sig));
	}
	T_SNAP_INT(what, fds);
	T_SNAP_INT(what, threads);
	T_SNAP_INT(what, nnp);
	T_SNAP_INT(what, seccomp);
	T_SNAP_INT(what, filters);
	T_SNAP_INT(what, dumpable);
	int n = t_snap_maps_diff(a, b);
	if (n)
		t_fail("%s: %d mapping(s) changed (above)", what, n);
}

struct t_snap t_snap_before, t_snap_after;

void t_snap_begin(void)
{
	t_snap_take(&t_snap_before);
}

void t_snap_end(unsigned flags, const char *what)
{
	t_snap_take(&t_snap_after);
	t_snap_check(&t_snap_before, &t_snap_after, flags, what);
}
