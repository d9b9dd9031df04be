/*
 * The program `t_watch_symtab` runs under `mpkit watch`, built with -g and
 * without -rdynamic (its globals are in .symtab only), and a stripped copy
 * (in no table).  No argument: `counter` (3 at start) is set from set()
 * to 37, 377, 3777 and -2, the static `level` (1) to 2.  "read": a
 * read() from a pipe holding "hello" into the global `inbuf`, printed as
 * its return value and errno's name.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

long counter = 3;
static volatile short level = 1;
char inbuf[16];

void set(volatile long *p, long v);

__attribute__((noinline)) void set(volatile long *p, long v)
{
	*p = v;
}

static int read_into_inbuf(void)
{
	int p[2];
	if (pipe(p) || write(p[1], "hello", 5) != 5)
		return 1;
	ssize_t n = read(p[0], inbuf, sizeof(inbuf));
	printf("read: %zd %s\n", n, n < 0 ? (errno == EFAULT ? "EFAULT" : strerror(errno)) : inbuf);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "read"))
		return read_into_inbuf();
	for (long v = counter * 10 + 7; v < 5000; v = v * 10 + 7)
		set(&counter, v);
	set(&counter, -2);
	level = 2;
	printf("counter=%ld level=%d\n", counter, level);
	return 0;
}
