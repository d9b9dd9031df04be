/* SPDX-License-Identifier: MIT */
/*
 * Configuration from the environment.  Read with secure_getenv(), so a
 * setuid or setgid program cannot be talked into the soft backend (or a
 * smaller key budget, or open heap metadata) by whoever runs it: there the
 * defaults apply.  A bad value is an error, never silently a default: the
 * first call that fails says which variable, what it holds and what it may
 * hold, once, on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpkit.h"
#include "../arch/arch.h"
#include "env.h"

static const struct {
	const char *name, *allowed;
} vars[MPK_ENV_COUNT] = {
	[MPK_ENV_BACKEND] = { "MPKIT_BACKEND", "hw, soft or auto (the default)" },
	[MPK_ENV_KEYS] = { "MPKIT_KEYS", "a number of hardware keys from 1 to 15 (default 15)" },
	[MPK_ENV_HEAP_META] = { "MPKIT_HEAP_META", "open, closed or auto (the default)" },
	[MPK_ENV_SECRETMEM] = { "MPKIT_SECRETMEM", "auto (the default), require or off" },
	[MPK_ENV_REPORT] = { "MPKIT_REPORT",
			     "fd:N (an open file descriptor) or a file's path, %p for the process id "
			     "(default: stderr)" },
};

const char *mpk__env_name(enum mpk_env_var v)
{
	return vars[v].name;
}

const char *mpk__env_allowed(enum mpk_env_var v)
{
	return vars[v].allowed;
}

const char *mpk__env_value(enum mpk_env_var v)
{
	const char *s = secure_getenv(vars[v].name);
	return s && *s ? s : NULL;
}

static int keyword(const char *s, const char *const *words, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, words[i]))
			return i;
	return -1;
}

/* MPKIT_REPORT: "fd:N", or a path that holds at most one %p and no
 * other %, short enough with the pid in it. */
static int report_spec(const char *s)
{
	if (!s)
		return MPK_REPORT_STDERR;
	if (!strncmp(s, "fd:", 3)) {
		char *end;
		int saved = errno;
		errno = 0;
		long n = strtol(s + 3, &end, 10);
		bool ok = !errno && !*end && end != s + 3 && s[3] >= '0' && s[3] <= '9' && n <= 1 << 20;
		errno = saved;
		return ok ? MPK_REPORT_FD + (int)n : -1;
	}
	const char *pct = strchr(s, '%');
	if (pct && (pct[1] != 'p' || strchr(pct + 2, '%')))
		return -1;
	return strlen(s) + (pct ? 10 : 0) < MPK_REPORT_PATH_MAX ? MPK_REPORT_PATH : -1;
}

int mpk__env_parse(enum mpk_env_var v, int dflt)
{
	static const char *const backends[] = { "auto", "hw", "soft" };
	static const char *const metas[] = { "auto", "open", "closed" };
	const char *s = mpk__env_value(v);
	char *end;
	int k;

	switch (v) {
	case MPK_ENV_BACKEND:
		if (!s)
			return 0;
		k = keyword(s, backends, 3);
		return k == 1 ? MPK_BACKEND_HW : k == 2 ? MPK_BACKEND_SOFT : k;
	case MPK_ENV_KEYS: {
		if (!s)
			return dflt;
		int saved = errno;
		errno = 0;
		long n = strtol(s, &end, 10);
		bool ok = !errno && !*end && end != s && n >= 1 && n <= MPK_ARCH_NKEYS - 1;
		errno = saved;
		return ok ? (int)n : -1;
	}
	case MPK_ENV_HEAP_META:
		if (!s)
			return MPK_META_AUTO;
		k = keyword(s, metas, 3);
		return k == 1 ? MPK_META_OPEN : k == 2 ? MPK_META_CLOSED : k < 0 ? -1 : MPK_META_AUTO;
	case MPK_ENV_SECRETMEM: {
		static const char *const modes[] = { "auto", "require", "off" };
		return s ? keyword(s, modes, 3) : MPK_SECRETMEM_AUTO;
	}
	case MPK_ENV_REPORT:
		return report_spec(s);
	case MPK_ENV_COUNT:
		break;
	}
	return -1;
}

void mpk__env_describe(enum mpk_env_var v, char *buf, size_t size)
{
	const char *s = mpk__env_value(v);
	snprintf(buf, size, "mpkit: %s=\"%.40s%s\" is not valid: %s", vars[v].name, s ? s : "",
		 s && strlen(s) > 40 ? "..." : "", vars[v].allowed);
}

void mpk__env_complain(const char *msg)
{
	static int said;

	if (__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		return;
	char line[256];
	int n = snprintf(line, sizeof(line), "%s\n", msg);
	if (n > 0 && write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0) {
		/* nowhere else to say it */
	}
}
