/* SPDX-License-Identifier: MIT */
/* --lib NAME[,deny=write|all][,heap|,noheap][,out=|keep=GLOB...] (guard_opts.h). */
#include <fnmatch.h>
#include <string.h>

#include "guard_opts.h"

/* An export's name, or a glob of one: symbol characters and fnmatch()'s
 * (no colon, which ends an entry of MPKIT_GUARD_LIB, nor a blank). */
static int glob_ok(const char *g)
{
	static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.$*?[]!^-";

	return *g && strspn(g, ok) == strlen(g);
}

const char *guard_opts_parse(char *entry, struct guard_opts *o)
{
	char *w = strchr(entry, ',');

	o->deny_all = o->heap = -1;
	o->nrules = 0;
	o->why = NULL;
	if (!w)
		return NULL;
	*w++ = 0;
	/* A library's file name has no comma; the last word said wins. */
	for (char *next; w; w = next) {
		if ((next = strchr(w, ',')))
			*next++ = 0;
		int out = !strncmp(w, "out=", 4);
		if (!strcmp(w, "deny=write") || !strcmp(w, "deny=all"))
			o->deny_all = w[5] == 'a';
		else if (!strcmp(w, "heap") || !strcmp(w, "noheap"))
			o->heap = w[0] == 'h';
		else if (out || !strncmp(w, "keep=", 5)) {
			const char *g = w + (out ? 4 : 5);
			if (!glob_ok(g)) {
				o->why = "it takes an export's name, or a glob of names (* ? [...])";
				return w;
			}
			if (o->nrules == GUARD_RULES) {
				o->why = "more than 16 out= and keep= for one library";
				return w;
			}
			o->rule[o->nrules++] = (struct guard_rule){ g, out };
		} else
			return w;
	}
	return NULL;
}

int guard_rules_match(const struct guard_rule *r, int n, const char *name)
{
	while (n-- > 0)
		if (!fnmatch(r[n].glob, name, 0))
			return n;
	return -1;
}
