/* mpk_map_file(): a shared file mapping in a domain.  Stores made with
 * rights reach the file; a store without them faults (SEGV_PKUERR with the
 * domain's key on hw, SEGV_ACCERR on soft) and the file never sees it;
 * reads follow the rights too; mpk_free() and destroying the domain unmap
 * it, and what was written stays in the file. */
#include <fcntl.h>

#include "t_state.h"

static size_t page;

static int tmp_file(size_t len)
{
	char path[] = "/tmp/mpkit-mapfile-XXXXXX";
	int fd = mkstemp(path);

	REQUIRE(fd >= 0);
	unlink(path);
	REQUIRE(ftruncate(fd, (off_t)len) == 0);
	return fd;
}

static unsigned char file_byte(int fd, off_t at)
{
	unsigned char c = 0;
	REQUIRE(pread(fd, &c, 1, at) == 1);
	return c;
}

static void scenario(void)
{
	page = t_page();
	int fd = tmp_file(4 * page);
	unsigned char init[64];
	memset(init, 0x11, sizeof(init));
	REQUIRE(pwrite(fd, init, sizeof(init), (off_t)page) == (ssize_t)sizeof(init));

	mpk_domain *d = mpk_domain_create("mapfile", MPK_RW, 0);
	REQUIRE(d);
	int domains = t_domains();
	unsigned char *p = mpk_map_file(d, fd, 0, 4 * page);
	REQUIRE(p);
	CHECK(mpk_domain_of(p) == d && mpk_domain_of(p + 4 * page - 1) == d);
	CHECK(t_domains() == domains);
	struct t_map m;
	CHECK(t_map_of(p, &m) && !strcmp(m.perms, "rw-s"));

	/* Rights: stores reach the file, and the file's bytes show. */
	CHECK(p[page] == 0x11);
	p[0] = 0xa1;
	p[3 * page + 7] = 0xa2;
	CHECK(msync(p, 4 * page, MS_SYNC) == 0);
	CHECK(file_byte(fd, 0) == 0xa1 && file_byte(fd, 3 * (off_t)page + 7) == 0xa2);

	/* Read-only: a store faults and the file keeps its byte. */
	REQUIRE(mpk_set(d, MPK_READ) == 0);
	CHECK_FAULT(t_write_in_child(p + 2 * page), d, p + 2 * page);
	CHECK_NO_FAULT(t_read_in_child(p + 2 * page));
	CHECK(file_byte(fd, 2 * (off_t)page) == 0);
	CHECK(p[0] == 0xa1);

	/* No access: reads fault as well. */
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	CHECK_FAULT(t_read_in_child(p + page), d, p + page);
	CHECK_FAULT(t_write_in_child(p), d, p);
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	CHECK(file_byte(fd, 0) == 0xa1);

	/* mpk_free() unmaps it; the file keeps what was written. */
	CHECK(mpk_free(d, p) == 0);
	CHECK(!t_any_mapped(p, 4 * page));
	CHECK(file_byte(fd, 0) == 0xa1);

	/* An offset, a length that is not whole pages; the domain's
	 * destruction unmaps it. */
	unsigned char *q = mpk_map_file(d, fd, (off_t)page, 100);
	REQUIRE(q);
	CHECK(q[0] == 0x11 && q[63] == 0x11 && q[64] == 0);
	q[1] = 0xb1;
	CHECK(mpk_domain_destroy(d) == 0);
	CHECK(!t_any_mapped(q, page));
	CHECK(file_byte(fd, (off_t)page + 1) == 0xb1);

	/* A domain created closed: its file pages are closed from the start. */
	mpk_domain *e = mpk_domain_create("mapfile-closed", MPK_NONE, 0);
	REQUIRE(e);
	unsigned char *r = mpk_map_file(e, fd, 0, page);
	REQUIRE(r);
	CHECK_FAULT(t_read_in_child(r), e, r);
	MPK_WITH(e, MPK_READ) {
		CHECK(r[0] == 0xa1);
	}
	CHECK(mpk_domain_destroy(e) == 0);
	close(fd);
}

int main(void)
{
	return t_both_backends(scenario);
}
