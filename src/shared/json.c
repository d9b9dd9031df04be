/* SPDX-License-Identifier: MIT */
/* JSON strings, numbers and booleans (json.h). */
#include <math.h>

#include "json.h"

/* The length of the valid UTF-8 sequence at s (1 to 4), or 0: a stray
 * continuation byte, a cut sequence, an overlong form, a surrogate or a
 * code point past U+10FFFF (RFC 3629). */
static int utf8_len(const unsigned char *s)
{
	unsigned c = s[0], lo = 0x80, hi = 0xbf;
	int n;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (s[1] < lo || s[1] > hi) /* the second byte carries the range rules */
		return 0;
	for (int i = 2; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

void mpk_json_str(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	if (!s) {
		fputs("null", f);
		return;
	}
	putc('"', f);
	while (*s) {
		int n = utf8_len(s);
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (*s == '\t')
			fputs("\\t", f);
		else if (*s == '\r')
			fputs("\\r", f);
		else if (*s < 0x20 || *s == 0x7f || !n)
			fprintf(f, "\\u%04x", *s);
		else
			fwrite(s, 1, (size_t)n, f);
		s += n ? n : 1;
	}
	putc('"', f);
}

void mpk_json_num(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.6g", v);
	else
		fputs("null", f);
}

void mpk_json_bool(FILE *f, int v)
{
	fputs(v ? "true" : "false", f);
}
