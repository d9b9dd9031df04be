/* SPDX-License-Identifier: MIT */
/* --lib NAME[,deny=write|all][,heap|,noheap] (guard_opts.h). */
#include <string.h>

#include "guard_opts.h"

const char *guard_opts_parse(char *entry, struct guard_opts *o)
{
	char *w = strchr(entry, ',');

	o->deny_all = o->heap = -1;
	if (!w)
		return NULL;
	*w++ = 0;
	/* A library's file name has no comma; the last word said wins. */
	for (char *next; w; w = next) {
		if ((next = strchr(w, ',')))
			*next++ = 0;
		if (!strcmp(w, "deny=write") || !strcmp(w, "deny=all"))
			o->deny_all = w[5] == 'a';
		else if (!strcmp(w, "heap") || !strcmp(w, "noheap"))
			o->heap = w[0] == 'h';
		else
			return w;
	}
	return NULL;
}
