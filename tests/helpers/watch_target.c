/*
 * The program `t_watch_preload` runs under `mpkit watch`: it knows nothing
 * of mpkit.  It bumps `counter` 5 times from bump(), writes `neighbour`
 * (same page) 3 times, reads counter, and prints both.  -rdynamic puts the
 * symbols in the dynamic table for MPKIT_WATCH=counter and the backtraces.
 */
#include <stdio.h>

long counter;
long neighbour;

void bump(volatile long *p);

__attribute__((noinline)) void bump(volatile long *p)
{
	*p = *p + 1;
}

int main(void)
{
	for (int i = 0; i < 5; i++)
		bump(&counter);
	for (int i = 0; i < 3; i++)
		bump(&neighbour);
	printf("counter=%ld neighbour=%ld\n", counter, neighbour);
	return 0;
}
