/* SPDX-License-Identifier: MIT */
/*
 * /proc/PID/mem closed with Landlock, for mpk_lockdown(MPK_LOCK_PROC_MEM).
 * Seccomp cannot do it: open()'s path is a pointer into memory the caller
 * controls, which the filter cannot read (and the kernel reads it again
 * after the filter, so a check there would race).  Landlock can, without
 * privileges, from Linux 5.13.  It allows by hierarchy, so the ruleset
 * handles only opening files for reading and writing and allows that
 * beneath everything: each entry of /, each entry of /proc but this
 * process's directory, each entry of that but mem and task, each entry of
 * task/TID but mem.  Symbolic links are skipped: what they point to is
 * covered by its own rule.  Fail-closed where it cannot say: files that
 * appear later at those levels (a new top-level directory, /proc/NEWPID,
 * a thread started later's task/TID) cannot be opened.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lockdown.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

#define ACCESS (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE)

static void allow(int ruleset, int dirfd, const char *name)
{
	struct landlock_path_beneath_attr pb = { .allowed_access = ACCESS };
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) || S_ISLNK(st.st_mode))
		return;
	pb.parent_fd = openat(dirfd, name, O_PATH | O_CLOEXEC | O_NOFOLLOW);
	if (pb.parent_fd < 0)
		return;
	syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
	close(pb.parent_fd);
}

struct entries {
	int ruleset;
	const char *path;
	const char *const *skip;
	const char *descend;
	void (*fn)(int ruleset, const char *path);
};

static bool allow_entry(int dirfd, const char *name, void *arg)
{
	const struct entries *e = arg;

	for (const char *const *s = e->skip; *s; s++)
		if (!strcmp(name, *s))
			return false;
	if (e->descend && !strcmp(name, e->descend)) {
		char sub[512];
		snprintf(sub, sizeof(sub), "%s/%s", e->path, name);
		e->fn(e->ruleset, sub);
		return false;
	}
	allow(e->ruleset, dirfd, name);
	return false;
}

/* Allow every entry of path but those in skip (NULL-terminated) and, if
 * descend is set, call it for the entry named so instead.  The directory
 * is read without opendir(), whose malloc() mpkit's locks forbid. */
static int allow_entries(int ruleset, const char *path, const char *const *skip,
			 const char *descend, void (*fn)(int ruleset, const char *path))
{
	struct entries e = { ruleset, path, skip, descend, fn };
	return mpk_os_dir_each(path, allow_entry, &e) < 0 ? -1 : 0;
}

static const char *const no_mem[] = { "mem", NULL };
static const char *const none[] = { NULL };

static void task_dir(int ruleset, const char *path)
{
	allow_entries(ruleset, path, no_mem, NULL, NULL);
}

static bool task_entry(int dirfd, const char *name, void *arg)
{
	const struct entries *e = arg;
	char sub[512];

	(void)dirfd;
	snprintf(sub, sizeof(sub), "%s/%s", e->path, name);
	task_dir(e->ruleset, sub);
	return false;
}

/* Each task/TID: its entries but mem. */
static void tasks(int ruleset, const char *path)
{
	struct entries e = { ruleset, path, NULL, NULL, NULL };
	mpk_os_dir_each(path, task_entry, &e);
}

static void self_dir(int ruleset, const char *path)
{
	allow_entries(ruleset, path, no_mem, "task", tasks);
}

static const char *const no_proc[] = { "proc", NULL };

int mpk__landlock_proc_mem_ruleset(void)
{
	struct landlock_ruleset_attr ra = { .handled_access_fs = ACCESS };
	char pid[32];

	if (syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) < 1) {
		errno = ENOTSUP;
		return -1;
	}
	int fd = (int)syscall(SYS_landlock_create_ruleset, &ra, sizeof(ra), 0);
	if (fd < 0)
		return -1;
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (allow_entries(fd, "/", no_proc, NULL, NULL) ||
	    allow_entries(fd, "/proc", none, pid, self_dir)) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int mpk__landlock_apply(int ruleset_fd)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return (int)syscall(SYS_landlock_restrict_self, ruleset_fd, 0);
}
