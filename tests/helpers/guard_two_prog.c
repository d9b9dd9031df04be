/* SPDX-License-Identifier: MIT */
/*
 * t_guard_multi's program: it links libguardtest.so and libguardtwo.so
 * (which calls the first) and knows nothing of mpkit.  No argument: calls
 * into each library and from one into the other, their results printed.
 * "write1"/"write2": it writes the state libguardtest/libguardtwo hands
 * out; "stray": libguardtwo's code writes libguardtest's state;
 * "both": it writes each library's state once (for --report).
 */
#include <stdio.h>
#include <string.h>

#include "guard_lib.h"
#include "guard_two_lib.h"

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	printf("add %ld\n", g_add(1));
	printf("add2 %ld\n", g2_add(2));
	printf("call %ld\n", g2_call(3));
	printf("back %ld\n", g2_back(5));
	printf("read %ld %ld\n", *g_ptr(), *g2_ptr());
	fflush(stdout);
	if (!strcmp(mode, "write1"))
		*g_ptr() = 11;
	else if (!strcmp(mode, "write2"))
		*g2_ptr() = 12;
	else if (!strcmp(mode, "stray"))
		g2_poke(g_ptr(), 13);
	else if (!strcmp(mode, "both"))
		*g_ptr() = 11, *g2_ptr() = 12;
	printf("wrote %ld %ld\n", *g_ptr(), *g2_ptr());
	return 0;
}
