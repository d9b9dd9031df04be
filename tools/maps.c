/* SPDX-License-Identifier: MIT */
/*
 * mpkit maps PID|self: a process's mappings with their protection key
 * (ProtectionKey in /proc/PID/smaps) and the mpkit domain they belong to,
 * from the region's name ([anon:mpk:NAME], where the kernel names memory)
 * or else from the registry page the library keeps (src/shared/registry.h), read
 * through /proc/PID/mem (the ptrace rules apply: the same user with
 * kernel.yama.ptrace_scope 0, a parent, or root).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "procmaps.h"
#include "registry.h"

struct vma {
	uint64_t lo, hi;
	char perms[5];
	unsigned long inode;
	char path[256];
	int pkey; /* -1: the kernel does not say */
	const char *domain;
};

struct maps {
	struct vma *v;
	size_t n, cap;
	int have_pkeys;
};

static int read_smaps(const char *pid, struct maps *m)
{
	struct mpk_procmaps pm;
	struct mpk_procmaps_vma e;
	int rc;

	if (mpk_procmaps_open(&pm, pid, "ProtectionKey"))
		return -1;
	while ((rc = mpk_procmaps_next(&pm, &e)) > 0) {
		if (m->n == m->cap) {
			m->cap = m->cap ? 2 * m->cap : 64;
			struct vma *nv = realloc(m->v, m->cap * sizeof(*nv));
			if (!nv) {
				mpk_procmaps_close(&pm);
				errno = ENOMEM;
				return -1;
			}
			m->v = nv;
		}
		struct vma *v = &m->v[m->n++];
		*v = (struct vma){ .lo = e.lo, .hi = e.hi, .inode = e.inode, .pkey = (int)e.field };
		snprintf(v->perms, sizeof(v->perms), "%s", e.perms);
		snprintf(v->path, sizeof(v->path), "%s", e.path);
		m->have_pkeys |= e.field >= 0;
	}
	mpk_procmaps_close(&pm);
	return rc;
}

/* Copy the registry at lo into r, whole and consistent: 1 done, 0 not a
 * registry, -1 with errno (an error of /proc/PID/mem). */
static int copy_registry(int fd, uint64_t lo, struct mpk_reg_header *r)
{
	for (int tries = 0; tries < 100; tries++) {
		uint32_t seq;
		if (pread(fd, r, MPK_REG_SIZE, (off_t)lo) != (ssize_t)MPK_REG_SIZE)
			return -1;
		if (memcmp(r->magic, MPK_REG_MAGIC, sizeof(r->magic)))
			return 0;
		if (pread(fd, &seq, sizeof(seq), (off_t)(lo + offsetof(struct mpk_reg_header, seq))) == sizeof(seq) &&
		    seq == r->seq && !(seq & 1) && r->count <= r->cap)
			return 1;
		usleep(1000); /* an update under way */
	}
	return 0;
}

/* The registries of pid, copied whole and consistent, as one: a process
 * may hold more than one mpkit (a program linked with libmpkit.a, run
 * with the drop-in allocator, which brings libmpkit.so), each with its
 * registry.  NULL with errno ENOENT (none: not an mpkit process, or no
 * region yet) or the error of /proc/PID/mem (EACCES, EPERM: the ptrace
 * rules). */
static struct mpk_reg_header *read_registry(const char *pid, const struct maps *m)
{
	char path[64];
	int err = ENOENT, found = 0;

	snprintf(path, sizeof(path), "/proc/%s/mem", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct mpk_reg_header *all = NULL, *r = malloc(MPK_REG_SIZE);
	for (size_t i = 0; r && i < m->n; i++) {
		const struct vma *v = &m->v[i];
		if (v->hi - v->lo != MPK_REG_SIZE || strcmp(v->perms, "rw-p") || v->inode ||
		    (v->path[0] && strcmp(v->path, "[anon:mpk:registry]")))
			continue;
		int got = copy_registry(fd, v->lo, r);
		if (got < 0)
			err = errno;
		if (got <= 0)
			continue;
		size_t have = all ? all->count : 0;
		struct mpk_reg_header *n = realloc(all, sizeof(*all) + (have + r->count) * sizeof(r->entry[0]));
		if (!n) {
			err = errno;
			break;
		}
		if (!all)
			*n = *r, n->count = n->cap = n->dropped = 0;
		all = n;
		memcpy(&all->entry[have], r->entry, r->count * sizeof(r->entry[0]));
		all->count += r->count;
		all->cap += r->cap;
		all->dropped += r->dropped;
		found++;
	}
	free(r);
	close(fd);
	if (!found) {
		free(all);
		all = NULL;
		errno = err;
	}
	return all;
}

/* The domain of each mapping: its name from the kernel, else the
 * registry (a region the mapping lies in; the kernel may split one). */
static void attach_domains(struct maps *m, const struct mpk_reg_header *r)
{
	for (size_t i = 0; i < m->n; i++) {
		struct vma *v = &m->v[i];
		if (!strncmp(v->path, "[anon:mpk:", 10) && strcmp(v->path, "[anon:mpk:registry]")) {
			v->domain = v->path + 10;
			v->path[strlen(v->path) - 1] = 0; /* the ']' */
			continue;
		}
		for (uint32_t k = 0; r && k < r->count; k++) {
			const struct mpk_reg_entry *e = &r->entry[k];
			if (v->lo >= e->start && v->hi <= e->start + e->len) {
				v->domain = e->name;
				break;
			}
		}
	}
}

static void print_json(const char *pid, const struct maps *m, const struct mpk_reg_header *r, int reg_err,
		       int all)
{
	int first = 1;

	printf("{\n  \"pid\": %s,\n", pid);
	printf("  \"protection_keys\": %s,\n", m->have_pkeys ? "true" : "false");
	printf("  \"registry\": %s,\n", r ? "true" : "false");
	if (!r) {
		printf("  \"registry_error\": ");
		mpk_json_str(stdout, strerror(reg_err));
		printf(",\n");
	} else if (r->dropped) {
		printf("  \"registry_dropped\": %u,\n", r->dropped);
	}
	printf("  \"mappings\": [");
	for (size_t i = 0; i < m->n; i++) {
		const struct vma *v = &m->v[i];
		if (!all && !v->domain && v->pkey <= 0)
			continue;
		printf("%s\n    { \"start\": \"0x%" PRIx64 "\", \"end\": \"0x%" PRIx64 "\", \"perms\": \"%s\", ",
		       first ? "" : ",", v->lo, v->hi, v->perms);
		first = 0;
		if (v->pkey >= 0)
			printf("\"pkey\": %d, ", v->pkey);
		else
			printf("\"pkey\": null, ");
		printf("\"domain\": ");
		mpk_json_str(stdout, v->domain);
		if (!v->domain && v->path[0]) {
			printf(", \"path\": ");
			mpk_json_str(stdout, v->path);
		}
		printf(" }");
	}
	/* Rights are each thread's PKRU (hw) or the pages' protection (soft):
	 * the perms above show the latter; a thread's PKRU is register state
	 * another process reads only by stopping it with ptrace. */
	printf("\n  ],\n  \"thread_rights\": null\n}\n");
}

static void print_text(const char *pid, const struct maps *m, const struct mpk_reg_header *r, int reg_err,
		       int all)
{
	size_t shown = 0;

	printf("%-14s %-14s %-5s %-4s %s\n", "START", "END", "PERMS", "KEY", "DOMAIN");
	for (size_t i = 0; i < m->n; i++) {
		const struct vma *v = &m->v[i];
		if (!all && !v->domain && v->pkey <= 0)
			continue;
		char key[16] = "-";
		if (v->pkey >= 0)
			snprintf(key, sizeof(key), "%d", v->pkey);
		printf("%-14" PRIx64 " %-14" PRIx64 " %-5s %-4s %s\n", v->lo, v->hi, v->perms, key,
		       v->domain ? v->domain : v->path[0] ? v->path : "-");
		shown++;
	}
	printf("process %s: %zu mapping%s shown; keys %s; domains from %s\n", pid, shown, shown == 1 ? "" : "s",
	       m->have_pkeys ? "from ProtectionKey" : "not reported (no PKU)",
	       r ? "the registry and region names" : "region names only");
	if (!r)
		printf("  (no registry: %s)\n",
		       reg_err == ENOENT ? "not an mpkit process, or no domain memory yet" : strerror(reg_err));
	else if (r->dropped)
		printf("  (the registry was full: %u regions unnamed)\n", r->dropped);
}

/* The registry of pid as it is now, for each of maps_check()'s looks. */
static struct mpk_reg_header *registry_now(const char *pid)
{
	struct maps m = { 0 };
	struct mpk_reg_header *r = NULL;
	int err = 0;
	if (read_smaps(pid, &m))
		err = errno == ENOENT ? ESRCH : errno; /* ENOENT: no registry */
	else if (!(r = read_registry(pid, &m)))
		err = errno;
	free(m.v);
	errno = err;
	return r;
}

static int cmd_maps(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "check", no_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *pid = NULL;
	int json = 0, all = 0, check = 0, o;

	while ((o = cli_getopt(&cli_maps, argc, argv, "acjJh", longopts)) != -1) {
		if (o == 'h')
			return cli_help(&cli_maps);
		if (o == '?')
			return 2;
		*(o == 'a' ? &all : o == 'c' ? &check : &json) = 1;
	}
	if (check && (json || all))
		return cli_conflict(&cli_maps, "--check", json ? "--json" : "--all");
	for (int i = optind; i < argc; i++) {
		if (!pid && (!strcmp(argv[i], "self") || (*argv[i] && strspn(argv[i], "0123456789") == strlen(argv[i])))) {
			pid = argv[i];
		} else {
			fprintf(stderr, "mpkit maps: unknown argument '%s' (want one PID or self)\n", argv[i]);
			return 2;
		}
	}
	if (!pid) {
		cli_usage(&cli_maps, stderr);
		return 2;
	}
	if (check)
		return maps_check(pid, registry_now);
	struct maps m = { 0 };
	if (read_smaps(pid, &m)) {
		fprintf(stderr, "mpkit maps: /proc/%s/smaps: %s\n", pid, strerror(errno));
		free(m.v);
		return 1;
	}
	struct mpk_reg_header *r = read_registry(pid, &m);
	int reg_err = r ? 0 : errno;
	attach_domains(&m, r);
	char self[32];
	if (!strcmp(pid, "self")) {
		snprintf(self, sizeof(self), "%d", (int)getpid());
		pid = self;
	}
	if (json)
		print_json(pid, &m, r, reg_err, all);
	else
		print_text(pid, &m, r, reg_err, all);
	free(r);
	free(m.v);
	return cli_finish_output("maps", 0);
}

const struct cli_command cli_maps = {
	"maps", cmd_maps, "PID|self [--all|-a] [--json|-J|-j] | PID|self --check",
	"a process's mpkit regions: domain, protection key, permissions",
	"A process's mappings that carry a protection key or belong to an mpkit\n"
	"domain, with the domain's name (from the region's name, else from the\n"
	"registry mpkit keeps in the process, read through /proc/PID/mem: the\n"
	"ptrace rules apply).\n"
	"  -a, --all       every mapping\n"
	"  -j, -J, --json  the same as one JSON object\n"
	"  --check         each region's key and protection against what mpkit set\n"
	"                  (mpk_audit from outside); not with --all or --json\n"
	"exit status: 0; --check: 0 all match, 1 a mismatch, 2 an error; 2 usage\n",
};
