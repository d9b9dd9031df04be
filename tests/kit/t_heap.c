/* SPDX-License-Identifier: MIT */
#include "t_heap.h"

struct mpk_misuse t_misuse;

int t_misuses;

static void t_misuse_record(const struct mpk_misuse *m, void *arg)
{
	(void)arg;
	t_misuse = *m;
	t_misuses++;
}

void t_misuse_catch(void)
{
	REQUIRE(mpk_misuse_handler_set(t_misuse_record, NULL) == 0);
	t_misuses = 0;
	memset(&t_misuse, 0, sizeof(t_misuse));
}

void t_overflow(void *p, int c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((volatile unsigned char *)p)[i] = (unsigned char)c;
}

void t_flip(void *p, unsigned char bits)
{
	*(volatile unsigned char *)p ^= bits;
}

uint64_t t_cookie(const void *p, size_t n)
{
	uint64_t x = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull ^ n;
	return x ^ (x >> 31);
}

void t_cookie_put(void *p, size_t n)
{
	uint64_t c = t_cookie(p, n);
	memcpy(p, &c, 8);
	memcpy((char *)p + n - 8, &c, 8);
}

int t_cookie_ok(const void *p, size_t n)
{
	uint64_t c = t_cookie(p, n), a, b;
	memcpy(&a, p, 8);
	memcpy(&b, (const char *)p + n - 8, 8);
	return a == c && b == c;
}

size_t t_rss(void)
{
	unsigned long size, res;
	FILE *f = fopen("/proc/self/statm", "r");
	REQUIRE(f);
	REQUIRE(fscanf(f, "%lu %lu", &size, &res) == 2);
	fclose(f);
	return res * t_page();
}

void t_smaps_field(const void *addr, const char *field, char *out, size_t size)
{
	unsigned long a = (unsigned long)addr, lo, hi;
	char line[512];
	size_t flen = strlen(field);
	int in = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	REQUIRE(f);
	out[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2) { /* a mapping's first line */
			in = a >= lo && a < hi;
			continue;
		}
		if (in && !strncmp(line, field, flen)) {
			size_t n = strlen(line + flen);
			if (n >= size)
				n = size - 1;
			memcpy(out, line + flen, n);
			out[n] = 0;
			break;
		}
	}
	fclose(f);
}

void t_vmflags(const void *addr, char *out, size_t size)
{
	t_smaps_field(addr, "VmFlags:", out, size);
}

long t_locked_kb(const void *addr)
{
	char v[64];
	long kb = -1;

	t_smaps_field(addr, "Locked:", v, sizeof(v));
	if (sscanf(v, "%ld", &kb) != 1)
		return -1;
	return kb;
}

long t_locked_kib(void)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	REQUIRE(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %ld kB", &v) == 1)
			break;
	fclose(f);
	return v;
}

int t_vmflag(const void *addr, const char *flag)
{
	char flags[256], pad[8];
	t_vmflags(addr, flags, sizeof(flags));
	snprintf(pad, sizeof(pad), " %s", flag);
	return strstr(flags, pad) != NULL;
}

void t_limit(int resource, rlim_t value)
{
	struct rlimit r;
	REQUIRE(getrlimit(resource, &r) == 0);
	r.rlim_cur = value;
	REQUIRE(setrlimit(resource, &r) == 0);
}

void t_unlimit(int resource)
{
	struct rlimit r;
	REQUIRE(getrlimit(resource, &r) == 0);
	r.rlim_cur = r.rlim_max;
	REQUIRE(setrlimit(resource, &r) == 0);
}

size_t t_resident(const void *p, size_t len)
{
	size_t page = t_page(), n = 0;
	uintptr_t a = (uintptr_t)p & ~(page - 1), end = (uintptr_t)p + len;
	unsigned char v;

	for (; a < end; a += page)
		if (!mincore((void *)a, page, &v) && (v & 1))
			n++;
	return n;
}

int t_cap_ipc_lock(void)
{
	char line[256];
	unsigned long long eff = 0;
	FILE *f = fopen("/proc/self/status", "r");

	REQUIRE(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return (eff >> 14) & 1; /* CAP_IPC_LOCK */
}

void t_drop_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	REQUIRE(syscall(SYS_capget, &hdr, data) == 0);
	for (int i = 0; i < 2; i++) {
		unsigned bit = CAP_IPC_LOCK / 32 == i ? 1u << (CAP_IPC_LOCK % 32) : 0;
		data[i].effective &= ~bit;
		data[i].permitted &= ~bit;
		data[i].inheritable &= ~bit;
	}
	REQUIRE(syscall(SYS_capset, &hdr, data) == 0);
}

void t_need_memlock(size_t bytes)
{
	struct rlimit r;

	REQUIRE(getrlimit(RLIMIT_MEMLOCK, &r) == 0);
	if (r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= bytes || t_cap_ipc_lock())
		return;
	if (r.rlim_max == RLIM_INFINITY || r.rlim_max >= bytes) {
		r.rlim_cur = r.rlim_max;
		REQUIRE(setrlimit(RLIMIT_MEMLOCK, &r) == 0);
		return;
	}
	printf("skip: needs to lock %zu KiB; RLIMIT_MEMLOCK is %llu KiB (ulimit -l)\n",
	       bytes >> 10, (unsigned long long)r.rlim_cur >> 10);
	exit(T_SKIP);
}

size_t t_vsize(void)
{
	unsigned long size;
	FILE *f = fopen("/proc/self/statm", "r");
	REQUIRE(f);
	REQUIRE(fscanf(f, "%lu", &size) == 1);
	fclose(f);
	return size * t_page();
}

void t_heap_refused(mpk_heap *h)
{
	struct mpk_heap_stats st;

	CHECK_ERR(mpk_heap_malloc(h, 8), EINVAL);
	CHECK_ERR(mpk_heap_calloc(h, 1, 8), EINVAL);
	CHECK_ERR(mpk_heap_aligned_alloc(h, 64, 8), EINVAL);
	CHECK_ERR(mpk_heap_realloc(h, NULL, 8), EINVAL);
	CHECK_ERR(mpk_heap_free(h, NULL), EINVAL);
	CHECK_ERR(mpk_heap_usable_size(h, &st), EINVAL);
	CHECK_ERR(mpk_heap_stats_get(h, &st), EINVAL);
	CHECK_ERR(mpk_heap_domain(h), EINVAL);
	CHECK_ERR(mpk_heap_destroy(h), EINVAL);
}
