/* SPDX-License-Identifier: MIT */
/*
 * /proc/PID/maps and smaps (see procmaps.h).  A mapping's first line is
 * "lo-hi perms offset dev inode   path"; in smaps, lines "Name:   value"
 * follow it until the next mapping's first line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "procmaps.h"

int mpk_procmaps_open(struct mpk_procmaps *pm, const char *pid, const char *field)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%s/%s", pid ? pid : "self", field ? "smaps" : "maps");
	pm->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (pm->fd < 0)
		return -1;
	pm->field = field;
	pm->flen = field ? strlen(field) : 0;
	pm->pos = pm->len = 0;
	pm->eof = pm->err = pm->skip = pm->have_next = 0;
	return 0;
}

void mpk_procmaps_close(struct mpk_procmaps *pm)
{
	int saved = errno;

	if (pm->fd >= 0)
		close(pm->fd);
	pm->fd = -1;
	errno = saved;
}

/* The next line without its '\n' (one longer than the buffer: its start),
 * or NULL at the end or on a read error (pm->err). */
static char *next_line(struct mpk_procmaps *pm)
{
	for (;;) {
		char *s = pm->buf + pm->pos, *nl = memchr(s, '\n', pm->len - pm->pos);
		if (nl) {
			*nl = 0;
			pm->pos = (size_t)(nl + 1 - pm->buf);
			if (pm->skip) {
				pm->skip = 0;
				continue;
			}
			return s;
		}
		/* No whole line buffered: keep the partial one, read more. */
		if (pm->skip)
			pm->len = pm->pos = 0;
		memmove(pm->buf, s, pm->len - pm->pos);
		pm->len -= pm->pos;
		pm->pos = 0;
		if (pm->len == sizeof(pm->buf) - 1 || (pm->eof && pm->len)) {
			pm->buf[pm->len] = 0;
			pm->pos = pm->len;
			pm->skip = !pm->eof;
			return pm->buf;
		}
		if (pm->eof)
			return NULL;
		ssize_t k = read(pm->fd, pm->buf + pm->len, sizeof(pm->buf) - 1 - pm->len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			pm->err = errno;
			return NULL;
		}
		pm->eof = k == 0;
		pm->len += (size_t)k;
	}
}

/* Digits in base 10 or 16: the end, s itself if there are none. */
static const char *number(const char *s, int base, uint64_t *v)
{
	const char *p = s;

	for (*v = 0;; p++) {
		int d = *p >= '0' && *p <= '9' ? *p - '0'
			: base == 16 && *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
			: base == 16 && *p >= 'A' && *p <= 'F' ? *p - 'A' + 10 : -1;
		if (d < 0)
			return p;
		*v = *v * (uint64_t)base + (uint64_t)d;
	}
}

/* A word (perms, dev) and a space: what follows, or NULL.  The word into
 * out, cut to fit, unless out is NULL. */
static const char *word(const char *s, char *out, size_t len)
{
	size_t n = strcspn(s, " ");

	if (!n || s[n] != ' ')
		return NULL;
	if (out) {
		size_t c = n < len - 1 ? n : len - 1;
		memcpy(out, s, c);
		out[c] = 0;
	}
	return s + n + 1;
}

/* A mapping's first line into v: 1, or 0 for any other line. */
static int parse_head(const char *s, struct mpk_procmaps_vma *v)
{
	const char *e;
	uint64_t ino;

	if ((e = number(s, 16, &v->lo)) == s || *e != '-')
		return 0;
	s = e + 1;
	if ((e = number(s, 16, &v->hi)) == s || *e != ' ')
		return 0;
	if (!(s = word(e + 1, v->perms, sizeof(v->perms))))
		return 0;
	if ((e = number(s, 16, &v->offset)) == s || *e != ' ')
		return 0;
	if (!(s = word(e + 1, NULL, 0)))
		return 0;
	if ((e = number(s, 10, &ino)) == s || (*e && *e != ' '))
		return 0;
	v->inode = (unsigned long)ino;
	while (*e == ' ' || *e == '\t')
		e++;
	size_t n = strlen(e);
	n = n < sizeof(v->path) - 1 ? n : sizeof(v->path) - 1;
	memcpy(v->path, e, n);
	v->path[n] = 0;
	v->field = -1;
	return 1;
}

/* "Field:   123 kB" -> 123 into *out, if it is the field asked for. */
static void parse_field(const struct mpk_procmaps *pm, const char *s, long long *out)
{
	uint64_t v;
	int neg;

	if (strncmp(s, pm->field, pm->flen) || s[pm->flen] != ':')
		return;
	s += pm->flen + 1;
	while (*s == ' ' || *s == '\t')
		s++;
	neg = *s == '-';
	if (number(s + neg, 10, &v) != s + neg)
		*out = neg ? -(long long)v : (long long)v;
}

/* At the end: 0, or -1/errno after a read error. */
static int end(const struct mpk_procmaps *pm)
{
	if (!pm->err)
		return 0;
	errno = pm->err;
	return -1;
}

int mpk_procmaps_next(struct mpk_procmaps *pm, struct mpk_procmaps_vma *v)
{
	const char *l;

	if (pm->have_next) {
		*v = pm->next;
		pm->have_next = 0;
	} else {
		while ((l = next_line(pm)) && !parse_head(l, v))
			;
		if (!l)
			return end(pm);
	}
	/* smaps: the mapping's fields, up to the next mapping's first line */
	while (pm->field && (l = next_line(pm))) {
		if (parse_head(l, &pm->next)) {
			pm->have_next = 1;
			break;
		}
		if (v->field < 0)
			parse_field(pm, l, &v->field);
	}
	return pm->err ? end(pm) : 1;
}
