/* mpk_adopt() takes only whole, page-aligned, private anonymous read/write
 * memory that no domain owns yet.  Everything else is EINVAL, and the
 * memory offered stays the caller's: mapped as it was, in no domain, with
 * its contents, and no mprotect() was made. */
#include <fcntl.h>
#include <stdint.h>

#include "t_state.h"

static size_t page;

/* [p, p+len) is still plain memory of the caller. */
#define CHECK_UNTOUCHED(p, len, perms_)                                      \
	do {                                                                 \
		struct t_map m_;                                             \
		for (size_t o_ = 0; o_ < (len); o_ += page) {                \
			errno = 0;                                           \
			CHECK(!mpk_domain_of((char *)(p) + o_) && errno == ENOENT); \
			CHECK(t_map_of((char *)(p) + o_, &m_));              \
			CHECK(!strcmp(m_.perms, perms_));                    \
			CHECK(strncmp(m_.name, "[anon:mpk:", 10));           \
		}                                                            \
	} while (0)

/* A page-aligned page inside the mapping named name, or NULL. */
static void *page_in(const char *name)
{
	char line[512];
	void *p = NULL;
	FILE *f = fopen("/proc/self/maps", "r");

	REQUIRE(f);
	while (!p && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (strstr(line, name) && sscanf(line, "%lx-%lx", &lo, &hi) == 2 &&
		    hi - lo >= page)
			p = (void *)(hi - page);
	}
	fclose(f);
	return p;
}

static void *map(size_t pages, int prot, int flags, int fd)
{
	void *p = mmap(NULL, pages * page, prot, flags, fd, 0);
	REQUIRE(p != MAP_FAILED);
	return p;
}

int main(void)
{
	page = t_page();
	t_backend();
	mpk_domain *d = mpk_domain_create("adopt-d", MPK_RW, 0);
	mpk_domain *e = mpk_domain_create("adopt-e", MPK_RW, 0);
	REQUIRE(d && e);

	/* Good memory, offered in bad ways, with a hole after it. */
	unsigned char *m = t_map_anon(5);
	REQUIRE(munmap(m + 4 * page, page) == 0);
	t_fill(m, 4 * page, 7);
	/* Memory of domains, for overlaps; both open, so that on soft the
	 * pages look like any read/write anonymous memory. */
	unsigned char *r = mpk_alloc(d, 2 * page);
	unsigned char *s = t_map_anon(3);
	REQUIRE(r);
	t_fill(s, 3 * page, 8);
	REQUIRE(mpk_adopt(d, s + page, page) == 0);

	/* Memory that is not private anonymous read/write. */
	char path[] = "/tmp/mpkit-adopt-XXXXXX";
	int fd = mkstemp(path);
	REQUIRE(fd >= 0);
	unlink(path);
	REQUIRE(ftruncate(fd, 2 * (off_t)page) == 0);
	void *file_priv = map(2, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd);
	void *file_shared = map(2, PROT_READ | PROT_WRITE, MAP_SHARED, fd);
	void *shared = map(2, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1);
	void *ro = map(2, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1);
	void *none = map(2, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
	void *rwx = map(2, PROT_READ | PROT_WRITE | PROT_EXEC,
			MAP_PRIVATE | MAP_ANONYMOUS, -1);
	/* rw, rw, then read-only: not wholly read/write. */
	unsigned char *tail_ro = t_map_anon(3);
	REQUIRE(mprotect(tail_ro + 2 * page, page, PROT_READ) == 0);
	/* rw, hole, rw. */
	unsigned char *holey = t_map_anon(3);
	REQUIRE(munmap(holey + page, page) == 0);
	void *stack = page_in("[stack]");
	REQUIRE(stack);
	/* Grow the brk heap so that it exists even when malloc uses mmap. */
	void *brk0 = sbrk(0);
	void *heap = NULL;
	if (brk0 != (void *)-1 && sbrk((intptr_t)(2 * page)) != (void *)-1)
		heap = (void *)(((uintptr_t)brk0 + page - 1) & ~(uintptr_t)(page - 1));

	unsigned long long mp = t_mprotects();

	/* Bad arguments. */
	CHECK_ERR(mpk_adopt(NULL, m, page), EINVAL);
	CHECK_ERR(mpk_adopt(d, NULL, page), EINVAL);
	CHECK_ERR(mpk_adopt(d, m + 1, page), EINVAL);
	CHECK_ERR(mpk_adopt(d, m + page / 2, page), EINVAL);
	CHECK_ERR(mpk_adopt(d, m, 0), EINVAL);
	CHECK_ERR(mpk_adopt(d, m, 1), EINVAL);
	CHECK_ERR(mpk_adopt(d, m, page - 1), EINVAL);
	CHECK_ERR(mpk_adopt(d, m, page + 1), EINVAL);
	CHECK_ERR(mpk_adopt(d, m, 4 * page + 100), EINVAL);
	CHECK_ERR(mpk_adopt(d, m, SIZE_MAX), EINVAL);
	CHECK_ERR(mpk_adopt(d, m, SIZE_MAX & ~(page - 1)), EINVAL);
	CHECK_ERR(mpk_adopt(d, m, 5 * page), EINVAL); /* runs past its end */
	CHECK_UNTOUCHED(m, 4 * page, "rw-p");

	/* Not private anonymous read/write. */
	CHECK_ERR(mpk_adopt(d, file_priv, page), EINVAL);
	CHECK_ERR(mpk_adopt(d, file_shared, page), EINVAL);
	CHECK_ERR(mpk_adopt(d, shared, 2 * page), EINVAL);
	CHECK_ERR(mpk_adopt(d, ro, page), EINVAL);
	CHECK_ERR(mpk_adopt(d, none, 2 * page), EINVAL);
	CHECK_ERR(mpk_adopt(d, rwx, page), EINVAL);
	CHECK_ERR(mpk_adopt(d, tail_ro, 3 * page), EINVAL);
	CHECK_ERR(mpk_adopt(d, holey, 3 * page), EINVAL);
	CHECK_ERR(mpk_adopt(d, holey + page, page), EINVAL);
	CHECK_ERR(mpk_adopt(d, stack, page), EINVAL);
	if (heap)
		CHECK_ERR(mpk_adopt(d, heap, page), EINVAL);
	else
		printf("note: no brk heap here, that case not tried\n");
	CHECK_UNTOUCHED(file_priv, 2 * page, "rw-p");
	CHECK_UNTOUCHED(file_shared, 2 * page, "rw-s");
	CHECK_UNTOUCHED(shared, 2 * page, "rw-s");
	CHECK_UNTOUCHED(ro, 2 * page, "r--p");
	CHECK_UNTOUCHED(none, 2 * page, "---p");
	CHECK_UNTOUCHED(rwx, 2 * page, "rwxp");
	CHECK_UNTOUCHED(tail_ro, 2 * page, "rw-p");
	CHECK_UNTOUCHED(holey, page, "rw-p");
	CHECK_UNTOUCHED(holey + 2 * page, page, "rw-p");
	CHECK(!t_any_mapped(holey + page, page));
	CHECK_UNTOUCHED(stack, page, "rw-p");

	/* Memory a domain owns already, whole or in part. */
	CHECK_ERR(mpk_adopt(d, r, page), EINVAL);
	CHECK_ERR(mpk_adopt(d, r, 2 * page), EINVAL);
	CHECK_ERR(mpk_adopt(e, r + page, page), EINVAL);
	CHECK_ERR(mpk_adopt(d, s + page, page), EINVAL);
	CHECK_ERR(mpk_adopt(e, s + page, page), EINVAL);
	CHECK_ERR(mpk_adopt(e, s, 3 * page), EINVAL);
	CHECK_ERR(mpk_adopt(e, s, 2 * page), EINVAL);
	CHECK_ERR(mpk_adopt(d, s + page, 2 * page), EINVAL);
	CHECK(mpk_domain_of(r) == d && mpk_domain_of(r + 2 * page - 1) == d);
	CHECK(mpk_domain_of(s + page) == d);
	CHECK_UNTOUCHED(s, page, "rw-p");
	CHECK_UNTOUCHED(s + 2 * page, page, "rw-p");
	CHECK(t_intact(s, 3 * page, 8));

	CHECK(t_mprotects() == mp);
	CHECK(t_intact(m, 4 * page, 7));

	/* The memory was fine all along: adopted the right way, it keeps
	 * its contents and obeys the domain. */
	CHECK(mpk_adopt(d, m, 4 * page) == 0);
	CHECK(mpk_domain_of(m + 4 * page - 1) == d);
	CHECK(t_intact(m, 4 * page, 7));
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	CHECK_RIGHTS(d, m + 3 * page, MPK_NONE);
	CHECK_RIGHTS(d, s + page, MPK_NONE);
	CHECK_RIGHTS(d, r, MPK_NONE);
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	CHECK(t_intact(m, 4 * page, 7));

	CHECK(mpk_domain_destroy(d) == 0);
	CHECK(mpk_domain_destroy(e) == 0);
	close(fd);
	return t_done();
}
