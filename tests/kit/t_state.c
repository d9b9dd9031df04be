/* SPDX-License-Identifier: MIT */
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

int t_map_of(const void *addr, struct t_map *m)
{
	unsigned long a = (unsigned long)addr;
	char line[512];
	int found = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	REQUIRE(f);
	while (!found && fgets(line, sizeof(line), f)) {
		struct t_map e = { 0 };
		int n = sscanf(line, "%lx-%lx %4s %*s %*s %lu %255[^\n]", &e.lo,
			       &e.hi, e.perms, &e.inode, e.name);
		if (n < 4 || a < e.lo || a >= e.hi)
			continue;
		size_t skip = strspn(e.name, " ");
		memmove(e.name, e.name + skip, strlen(e.name + skip) + 1);
		*m = e;
		found = 1;
	}
	fclose(f);
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
