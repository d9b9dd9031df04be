/* SPDX-License-Identifier: MIT */
#include "t_state.h"

#include <fcntl.h>

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

/* One line of /proc/self/maps into e; 1 if it parsed. */
static int map_line(const char *line, struct t_map *e)
{
	memset(e, 0, sizeof(*e));
	int n = sscanf(line, "%lx-%lx %4s %*s %*s %lu %255[^\n]", &e->lo, &e->hi, e->perms, &e->inode, e->name);
	size_t skip = strspn(e->name, " ");
	memmove(e->name, e->name + skip, strlen(e->name + skip) + 1);
	return n >= 4;
}

/* read(), not stdio: a FILE is allocated, and an allocator that maps its
 * memory (musl's) may place it in the very hole the test looks at. */
int t_map_of(const void *addr, struct t_map *m)
{
	unsigned long a = (unsigned long)addr;
	char buf[4096];
	size_t have = 0;
	ssize_t r = 1;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	REQUIRE(fd >= 0);
	for (;;) {
		char *nl = memchr(buf, '\n', have);
		if (!nl) {
			REQUIRE(have < sizeof(buf) - 1); /* a line fits */
			if (r > 0)
				r = read(fd, buf + have, sizeof(buf) - 1 - have);
			if (r > 0) {
				have += (size_t)r;
				continue;
			}
			if (!have)
				break;
			nl = buf + have; /* a last line without its newline */
		}
		*nl = 0;
		struct t_map e;
		if (map_line(buf, &e) && a >= e.lo && a < e.hi) {
			*m = e;
			close(fd);
			return 1;
		}
		size_t used = nl < buf + have ? (size_t)(nl + 1 - buf) : have;
		memmove(buf, buf + used, have - used);
		have -= used;
	}
	close(fd);
	return 0;
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
