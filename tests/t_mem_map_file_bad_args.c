/* mpk_map_file() refuses bad arguments and unmappable files with the
 * documented errno, and then maps nothing: no region, no new mapping, no
 * mprotect(). */
#include <fcntl.h>
#include <sys/socket.h>

#include "t_state.h"

static size_t maps_lines(void)
{
	char line[512];
	size_t n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	REQUIRE(f);
	while (fgets(line, sizeof(line), f))
		n++;
	fclose(f);
	return n;
}

int main(void)
{
	size_t page = t_page();
	t_backend();
	mpk_domain *d = mpk_domain_create("badmap", MPK_RW, 0);
	mpk_domain *gone = mpk_domain_create("badmap-gone", MPK_RW, 0);
	REQUIRE(d && gone);
	REQUIRE(mpk_domain_destroy(gone) == 0);

	char path[] = "/tmp/mpkit-badmap-XXXXXX";
	int fd = mkstemp(path);
	REQUIRE(fd >= 0);
	REQUIRE(ftruncate(fd, 2 * (off_t)page) == 0);
	int ro = open(path, O_RDONLY);
	int wo = open(path, O_WRONLY);
	REQUIRE(ro >= 0 && wo >= 0);
	unlink(path);
	int pfd[2];
	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, pfd) == 0); /* read/write, not mappable */
	int closed = dup(fd);
	REQUIRE(closed >= 0 && close(closed) == 0);

	size_t lines = maps_lines();
	unsigned long long mp = t_mprotects();

	CHECK_ERR(mpk_map_file(NULL, fd, 0, page), EINVAL);
	CHECK_ERR(mpk_map_file(gone, fd, 0, page), EINVAL);
	CHECK_ERR(mpk_map_file(d, fd, 0, 0), EINVAL);
	CHECK_ERR(mpk_map_file(d, fd, 0, SIZE_MAX), ENOMEM); /* no memory holds it */
	CHECK_ERR(mpk_map_file(d, fd, -(off_t)page, page), EINVAL);
	CHECK_ERR(mpk_map_file(d, fd, 1, page), EINVAL);
	CHECK_ERR(mpk_map_file(d, fd, (off_t)page / 2, page), EINVAL);
	/* The file is two pages: nothing may reach past its end. */
	CHECK_ERR(mpk_map_file(d, fd, 0, 2 * page + 1), EINVAL);
	CHECK_ERR(mpk_map_file(d, fd, (off_t)page, page + 1), EINVAL);
	CHECK_ERR(mpk_map_file(d, fd, 3 * (off_t)page, 1), EINVAL);
	CHECK_ERR(mpk_map_file(d, -1, 0, page), EBADF);
	CHECK_ERR(mpk_map_file(d, closed, 0, page), EBADF);
	CHECK_ERR(mpk_map_file(d, ro, 0, page), EACCES);
	CHECK_ERR(mpk_map_file(d, wo, 0, page), EACCES);
	CHECK_ERR(mpk_map_file(d, pfd[0], 0, page), ENODEV);

	CHECK(maps_lines() == lines);
	CHECK(t_mprotects() == mp);
	CHECK(t_domains() == 1);

	/* The same file, asked for properly, maps. */
	void *p = mpk_map_file(d, fd, (off_t)page, page);
	CHECK(p && mpk_domain_of(p) == d);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
