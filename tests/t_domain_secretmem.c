/*
 * MPK_DOMAIN_SECRETMEM: all of a domain's memory (mpk_alloc() pages, a
 * heap's blocks, big and small, its vault) is memfd_secret memory.  Closed,
 * or open, process_vm_readv() and /proc/self/mem cannot read it, without
 * lockdown; the thread that opens it reads and writes it; heap blocks from
 * freed and reused memory are still zeroed by calloc (a purge does not
 * zero shared pages); a forked child finds it zeroed; mpk_adopt() and
 * mpk_map_file() refuse it (EOPNOTSUPP), changing nothing.
 */
#define _GNU_SOURCE
#include "t_heap.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>

/* Whether the kernel read len bytes of p equal to p's own (caller open). */
static int kernel_reads(const unsigned char *p, size_t len, const unsigned char *want)
{
	unsigned char buf[64] = { 0 };
	struct iovec l = { buf, len }, r = { (void *)p, len };
	int leaked = process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)len &&
		     !memcmp(buf, want, len);
	int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	REQUIRE(fd >= 0);
	memset(buf, 0, sizeof(buf));
	leaked += pread(fd, buf, len, (off_t)(uintptr_t)p) == (ssize_t)len && !memcmp(buf, want, len);
	close(fd);
	return leaked;
}

static mpk_domain *d;
static unsigned char *pg;

static void child(void *arg)
{
	(void)arg;
	int zero = 1;
	MPK_WITH(d, MPK_READ) {
		for (size_t i = 0; i < 64; i++)
			zero &= pg[i] == 0;
	}
	_exit(zero ? 0 : 1);
}

int main(void)
{
	struct mpk_info in;
	unsigned char want[64];

	t_backend();
	REQUIRE(mpk_info(&in) == 0);
	if (!in.secretmem)
		t_skip("this kernel has no memfd_secret (t_vault_secretmem_missing tests that)");
	t_need_memlock(4 << 20);
	for (int i = 0; i < 64; i++)
		want[i] = (unsigned char)(0x3c + i);
	CHECK_ERR(mpk_domain_create("kexcl", MPK_NONE, 1u << 7), EINVAL);
	REQUIRE(d = mpk_domain_create("kexcl", MPK_NONE, MPK_DOMAIN_SECRETMEM));
	REQUIRE(pg = mpk_alloc(d, 4096));
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	unsigned char *small = NULL, *big = NULL;
	MPK_WITH(d, MPK_RW) {
		memcpy(pg, want, 64);
		REQUIRE(small = mpk_heap_malloc(h, 64));
		REQUIRE(big = mpk_heap_malloc(h, 300000));
		memcpy(small, want, 64);
		memcpy(big, want, 64);
	}
	/* Closed, then open: the kernel reads none of it. */
	CHECK(kernel_reads(pg, 64, want) == 0);
	CHECK(kernel_reads(small, 64, want) == 0);
	CHECK(kernel_reads(big, 64, want) == 0);
	MPK_WITH(d, MPK_READ) {
		CHECK(!memcmp(pg, want, 64) && !memcmp(small, want, 64) && !memcmp(big, want, 64));
		CHECK(kernel_reads(pg, 64, want) == 0);
		CHECK(kernel_reads(small, 64, want) == 0);
	}
	CHECK_FAULT(t_read_in_child(pg), d, pg);

	/* Reused memory still comes zeroed. */
	MPK_WITH(d, MPK_RW) {
		unsigned char *r = mpk_heap_malloc(h, 40000);
		REQUIRE(r);
		memset(r, 0xff, 40000);
		CHECK(mpk_heap_free(h, r) == 0);
		for (int i = 0; i < 8; i++) {
			unsigned char *z = mpk_heap_calloc(h, 1, 40000);
			REQUIRE(z);
			for (size_t j = 0; j < 40000; j++)
				if (z[j]) {
					t_fail("calloc byte %zu is %#x", j, z[j]);
					break;
				}
			memset(z, 0xff, 40000);
			CHECK(mpk_heap_free(h, z) == 0);
		}
	}

	/* A child finds it zeroed. */
	struct t_fault f = t_run_child(child, NULL);
	CHECK(!f.faulted && f.exit_code == 0);

	/* Not for memory that is not the domain's to make. */
	void *mine = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(mine != MAP_FAILED);
	CHECK_ERR(mpk_adopt(d, mine, 4096), EOPNOTSUPP);
	CHECK(mpk_domain_of(mine) == NULL);
	int fd = memfd_create("kexcl", MFD_CLOEXEC);
	REQUIRE(fd >= 0 && ftruncate(fd, 4096) == 0);
	CHECK_ERR(mpk_map_file(d, fd, 0, 4096), EOPNOTSUPP);
	close(fd);
	munmap(mine, 4096);

	CHECK(mpk_heap_free(h, small) == 0 && mpk_heap_free(h, big) == 0);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_free(d, pg) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
