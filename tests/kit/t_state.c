/* SPDX-License-Identifier: MIT */
#include <fcntl.h>

#include "t_state.h"

size_t t_page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

int t_domains(void)
{
	struct mpk_info i;
	REQUIRE(mpk_info(&i) == 0);
	return i.domains;
}

int t_keys_in_use(void)
{
	struct mpk_info i;
	REQUIRE(mpk_info(&i) == 0);
	return i.keys_in_use;
}

unsigned long long t_mprotects(void)
{
	struct mpk_stats s;
	REQUIRE(mpk_stats_get(&s) == 0);
	return (unsigned long long)s.mprotect_calls;
}

void t_fill(void *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		((unsigned char *)p)[i] = (unsigned char)(i * 31 + seed);
}

int t_intact(const void *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		if (((const unsigned char *)p)[i] != (unsigned char)(i * 31 + seed))
			return 0;
	return 1;
}

/* Read with read(), not stdio: what fopen() allocates could itself be
 * mapped where a test has just unmapped something and looks. */
int t_map_of(const void *addr, struct t_map *m)
{
	unsigned long a = (unsigned long)addr;
	static char buf[1 << 16];
	size_t have = 0;
	int found = 0;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	REQUIRE(fd >= 0);
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		REQUIRE(n >= 0);
		have += (size_t)n;
		buf[have] = 0;
		char *line = buf, *nl;
		while (!found && (nl = strchr(line, '\n'))) {
			*nl = 0;
			struct t_map e = { 0 };
			int k = sscanf(line, "%lx-%lx %4s %*s %*s %lu %255[^\n]", &e.lo, &e.hi, e.perms, &e.inode, e.name);
			line = nl + 1;
			if (k < 4 || a < e.lo || a >= e.hi)
				continue;
			size_t skip = strspn(e.name, " ");
			memmove(e.name, e.name + skip, strlen(e.name + skip) + 1);
			*m = e;
			found = 1;
		}
		if (found || n == 0)
			break;
		have = strlen(line); /* a partial line: keep it */
		memmove(buf, line, have);
	}
	close(fd);
	return found;
}

int t_any_mapped(const void *p, size_t len)
{
	struct t_map m;
	for (size_t off = 0; off < len; off += t_page())
		if (t_map_of((const char *)p + off, &m))
			return 1;
	return 0;
}

int t_any_usable(const void *p, size_t len)
{
	struct t_map m;
	for (size_t off = 0; off < len; off += t_page())
		if (t_map_of((const char *)p + off, &m) &&
		    !(!strcmp(m.perms, "---p") &&
		      (!m.name[0] || !strcmp(m.name, "[anon:mpk:mpkit-window]"))))
			return 1;
	return 0;
}

void *t_map_anon(size_t pages)
{
	void *p = mmap(NULL, pages * t_page(), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(p != MAP_FAILED);
	return p;
}
