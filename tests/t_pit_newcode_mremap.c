/* Pitfall: new code from a file without PROT_EXEC.  A page of a file is
 * mapped r-x (as ld.so maps a library's text); mremap(MREMAP_MAYMOVE)
 * grows the mapping over the file's next page, which holds a WRPKRU, and
 * the new part is executable as the old.  After lockdown mremap() of
 * executable memory is denied: here with the default action (the process
 * is killed). */
#include "t_newcode.h"

static char path[PATH_MAX];
static void *text;

static void setup(void)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	text = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	close(fd);
}

static int attempt(void)
{
	if (text == MAP_FAILED || !text)
		return O_ERROR;
	unsigned char *g = mremap(text, 4096, 2 * 4096, MREMAP_MAYMOVE);
	if (g == MAP_FAILED)
		return pit_copy_outcome(-1, errno, NULL);
	return newcode_call(g + 4096);
}

int main(void)
{
	struct pit p = { "mremap grows file code", attempt, setup, 0,
			 { B(O_LEAKED), B(O_SIGILL) }, { B(O_KILLED), B(O_KILLED) },
			 "mremap of executable memory is denied" };
	REQUIRE(newcode_file(path) == 0);
	int rc = pit_main(&p);
	unlink(path);
	return rc;
}
