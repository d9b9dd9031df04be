/* SPDX-License-Identifier: MIT */
/* `mpkit watch`'s SPEC parser (watch_spec.h); no allocation, no stdio:
 * the helper runs it before the program's main(). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "watch_spec.h"

/* A whole number at s..end (decimal, 0x hex or 0 octal), no sign. */
static int number(const char *s, const char *end, unsigned long long *v)
{
	char buf[32], *e;

	if (s == end || (size_t)(end - s) >= sizeof(buf) || *s == '-' || *s == '+')
		return -1;
	memcpy(buf, s, (size_t)(end - s));
	buf[end - s] = 0;
	errno = 0;
	*v = strtoull(buf, &e, 0);
	return *e || errno ? -1 : 0;
}

int watch_spec_parse(const char *spec, struct watch_spec *out, const char **why)
{
	const char *end = spec + strlen(spec), *slash = strchr(spec, '/');
	unsigned long long v;

	memset(out, 0, sizeof(*out));
	if (slash) {
		if (strcmp(slash, "/r")) {
			*why = "a / only as the suffix /r";
			return -1;
		}
		out->reads = true;
		end = slash;
	}
	const char *plus = memchr(spec, '+', (size_t)(end - spec));
	const char *colon = memchr(spec, ':', (size_t)(end - spec));
	const char *name_end = plus ? plus : colon ? colon : end;
	if (name_end == spec) {
		*why = plus ? "no ADDR before +" : colon ? "no SYMBOL before :" : "empty";
		return -1;
	}
	if ((size_t)(name_end - spec) >= sizeof(out->name)) {
		*why = "the name is too long";
		return -1;
	}
	for (const char *c = spec; c < name_end; c++)
		if (*c == ' ' || *c == '\t' || *c == '\n' || *c == ',') {
			*why = "a name has no spaces or commas";
			return -1;
		}
	memcpy(out->name, spec, (size_t)(name_end - spec));
	if (plus) {
		out->by_addr = true;
		if (colon) {
			*why = "ADDR+LEN takes no :LEN";
			return -1;
		}
		if (number(spec, plus, &v) || !v) {
			*why = "ADDR is not a number (0x... or decimal)";
			return -1;
		}
		out->addr = (uintptr_t)v;
	}
	const char *len = plus ? plus + 1 : colon ? colon + 1 : NULL;
	if (len) {
		if (number(len, end, &v)) {
			*why = "LEN is not a number";
			return -1;
		}
		if (!v) {
			*why = "LEN must be at least 1";
			return -1;
		}
		out->len = (size_t)v;
	}
	return 0;
}
