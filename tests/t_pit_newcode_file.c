/* Pitfall: pwrite() into the file of code the process loaded from a
 * place it can write (a plugin in a user's directory, mapped r-x private
 * as ld.so maps it): the page cache is the mapping, the running code
 * changes at once.  At lockdown such code is copied out of the file (a
 * private copy of each page), so the write no longer reaches it; and
 * MADV_DONTNEED, which would drop the copy and bring the file's page
 * back, is denied there (EPERM, MPK_LOCK_ERRNO). */
#include "t_newcode.h"

static char path[PATH_MAX];
static void *text = MAP_FAILED;

static void setup(void)
{
	char page[4096] = { 0 };
	int fd = open(path, O_RDWR);

	if (fd < 0)
		return;
	memcpy(page, newcode_old, sizeof(newcode_old)); /* the run before wrote it */
	if (pwrite(fd, page, sizeof(page), 0) == (ssize_t)sizeof(page))
		text = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	close(fd);
}

static int attempt(void)
{
	int fd = open(path, O_WRONLY);
	if (text == MAP_FAILED || fd < 0)
		return O_ERROR;
	if (pwrite(fd, newcode_new, sizeof(newcode_new), 0) != (ssize_t)sizeof(newcode_new))
		return O_ERROR;
	close(fd);
	int o = newcode_call(text);
	if (o != O_KEPT)
		return o;
	if (madvise(text, 4096, MADV_DONTNEED))
		return pit_copy_outcome(-1, errno, NULL);
	return newcode_call(text);
}

int main(void)
{
	struct pit p = { "pwrite to a library's file", attempt, setup, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_SIGILL) }, { B(O_EPERM), B(O_EPERM) },
			 "the code is copied out of the file; MADV_DONTNEED on it is denied" };
	REQUIRE(newcode_file(path) == 0);
	int rc = pit_main(&p);
	unlink(path);
	return rc;
}
