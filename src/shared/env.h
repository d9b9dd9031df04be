/* SPDX-License-Identifier: MIT */
/* The environment variables mpkit reads: parsed in one place, each bad
 * value described in one line (env.c).  Also used by the mpkit tool. */
#ifndef MPK_ENV_H
#define MPK_ENV_H

enum mpk_env_var {
	MPK_ENV_BACKEND,   /* MPKIT_BACKEND */
	MPK_ENV_KEYS,      /* MPKIT_KEYS */
	MPK_ENV_HEAP_META, /* MPKIT_HEAP_META */
	MPK_ENV_SECRETMEM, /* MPKIT_SECRETMEM */
	MPK_ENV_REPORT,    /* MPKIT_REPORT */
	MPK_ENV_COUNT
};

enum { MPK_META_AUTO, MPK_META_OPEN, MPK_META_CLOSED };
enum { MPK_SECRETMEM_AUTO, MPK_SECRETMEM_REQUIRE, MPK_SECRETMEM_OFF };
enum { MPK_REPORT_STDERR, MPK_REPORT_PATH, MPK_REPORT_FD };
/* The longest MPKIT_REPORT path, %p expanded. */
#define MPK_REPORT_PATH_MAX 256

/* The variable's name, and what values it takes (for messages). */
const char *mpk__env_name(enum mpk_env_var v);
const char *mpk__env_allowed(enum mpk_env_var v);

/* Its value (secure_getenv(): NULL in a setuid/setgid program), NULL when
 * unset or empty. */
const char *mpk__env_value(enum mpk_env_var v);

/* The value parsed: BACKEND 0 (auto) or MPK_BACKEND_*; KEYS the budget, or
 * dflt when unset; HEAP_META MPK_META_*; SECRETMEM MPK_SECRETMEM_*; REPORT
 * MPK_REPORT_FD + N for "fd:N", MPK_REPORT_PATH for a path, MPK_REPORT_STDERR
 * when unset.  -1 when the value is bad. */
int mpk__env_parse(enum mpk_env_var v, int dflt);

/* Format "mpkit: NAME=\"VALUE\" is not valid: ALLOWED" into buf (size at
 * least 1). */
void mpk__env_describe(enum mpk_env_var v, char *buf, size_t size);

/* Print msg (one line) on stderr the first time any configuration error
 * is reported in this process; later reports print nothing. */
void mpk__env_complain(const char *msg);

#endif
