/* SPDX-License-Identifier: MIT */
#include "t_newcode.h"

#include <libgen.h>

const unsigned char newcode_old[6] = { 0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3 };
const unsigned char newcode_new[15] = { 0x31, 0xc9, 0x31, 0xd2, 0x31, 0xc0, 0x0f, 0x01,
					0xef, 0xb8, 0x02, 0x00, 0x00, 0x00, 0xc3 };

int newcode_call(const void *x)
{
	char buf[64] = { 0 };
	int r = ((int (*)(void))x)();

	if (r == 1)
		return O_KEPT;
	if (r != 2)
		return O_ERROR;
	memcpy(buf, pit_secret, sizeof(PIT_SECRET));
	return pit_copy_outcome(0, 0, buf);
}

int newcode_call_rw(void)
{
	unsigned char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return O_ERROR;
	memcpy(m, newcode_new, sizeof(newcode_new));
	return newcode_call(m);
}

int newcode_file(char *path)
{
	char exe[PATH_MAX], page[4096] = { 0 };
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return -1;
	exe[n] = 0;
	snprintf(path, PATH_MAX, "%s/newcode-XXXXXX", dirname(exe));
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	memcpy(page, newcode_old, sizeof(newcode_old));
	int rc = write(fd, page, sizeof(page)) == (ssize_t)sizeof(page) ? 0 : -1;
	memset(page, 0, sizeof(page));
	memcpy(page, newcode_new, sizeof(newcode_new));
	if (write(fd, page, sizeof(page)) != (ssize_t)sizeof(page))
		rc = -1;
	close(fd);
	return rc;
}
