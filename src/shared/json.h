/* SPDX-License-Identifier: MIT */
/*
 * JSON values for every --json of the mpkit command and the benchmarks
 * (src/shared/json.c): one escaping, so that any file name, symbol or
 * message makes valid JSON.  Not part of the library.
 */
#ifndef MPK_SHARED_JSON_H
#define MPK_SHARED_JSON_H

#include <stdio.h>

/* s as a JSON string, quotes included; NULL is null.  Quotes, backslashes
 * and every control character are escaped; valid UTF-8 passes through;
 * a byte that is not part of valid UTF-8 (a Latin-1 file name, a cut
 * sequence) becomes \u00XX, its value as a code point, so that the output
 * stays UTF-8 and the byte can be told back. */
void mpk_json_str(FILE *f, const char *s);
/* A number, or null when v is not finite (JSON has no NaN). */
void mpk_json_num(FILE *f, double v);
/* true or false. */
void mpk_json_bool(FILE *f, int v);

#endif
