/*
 * The program `t_watch_cli` runs under `mpkit watch`, built with -g and
 * without -rdynamic (its globals are in .symtab only), and a stripped copy
 * (in no table).  No argument: `counter` (3 at start) is set from set()
 * to 37, 377, 3777 and -2, the static `level` (1) to 2.  "read": a
 * read() from a pipe holding "hello" into the global `inbuf`, printed as
 * its return value and errno's name; "thread-read": the same from a
 * second thread.  "exit N": exit status N; "term": killed by SIGTERM.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
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

static void *read_into_inbuf(void *arg);

static void *read_into_inbuf(void *arg)
{
	(void)arg;
	int p[2];
	if (pipe(p) || write(p[1], "hello", 5) != 5)
		return "no pipe";
	ssize_t n = read(p[0], inbuf, sizeof(inbuf));
	printf("read: %zd %s\n", n, n < 0 ? (errno == EFAULT ? "EFAULT" : strerror(errno)) : inbuf);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	if (argc > 1 && !strcmp(argv[1], "read"))
		return read_into_inbuf(NULL) != NULL;
	if (argc > 2 && !strcmp(argv[1], "exit"))
		return atoi(argv[2]);
	if (argc > 1 && !strcmp(argv[1], "term"))
		return raise(SIGTERM);
	if (argc > 1 && !strcmp(argv[1], "thread-read"))
		return pthread_create(&t, NULL, read_into_inbuf, NULL) || pthread_join(t, NULL);
	for (long v = counter * 10 + 7; v < 5000; v = v * 10 + 7)
		set(&counter, v);
	set(&counter, -2);
	level = 2;
	printf("counter=%ld level=%d\n", counter, level);
	return 0;
}
