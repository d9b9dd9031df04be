/* mpk_domain_create() rejects bad names, rights and flags with EINVAL, and
 * a rejected create changes nothing: no domain, no key, no syscall, and an
 * existing domain keeps its memory and rights. */
#include <limits.h>

#include "t_state.h"

int main(void)
{
	size_t page = t_page();
	char too_long[65], longest[64];

	memset(too_long, 'x', 64);
	too_long[64] = 0;
	memset(longest, 'y', 63);
	longest[63] = 0;

	const char *bad_names[] = {
		"", "tab\there", "new\nline", "\x01", "del\x7f", "caf\xc3\xa9",
		"\xff", too_long,
	};
	const int bad_rights[] = { 2, 4, -1, 100, INT_MIN, INT_MAX };
	/* 1 is MPK_DOMAIN_SHARED, 2 MPK_DOMAIN_SECRETMEM */
	const unsigned bad_flags[] = { 4, 8, 0x80000000u, ~0u };

	/* A witness domain whose state must survive every failed call. */
	t_backend();
	mpk_domain *w = mpk_domain_create("witness", MPK_RW, 0);
	REQUIRE(w);
	unsigned char *p = mpk_alloc(w, page);
	REQUIRE(p);
	t_fill(p, page, 1);
	REQUIRE(mpk_set(w, MPK_READ) == 0);

	int domains = t_domains(), keys = t_keys_in_use();
	unsigned long long mp = t_mprotects();

	CHECK_ERR(mpk_domain_create(NULL, MPK_RW, 0), EINVAL);
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(*bad_names); i++)
		CHECK_ERR_CASE(mpk_domain_create(bad_names[i], MPK_RW, 0), EINVAL,
			       "name #%zu", i);
	for (size_t i = 0; i < sizeof(bad_rights) / sizeof(*bad_rights); i++)
		CHECK_ERR_CASE(mpk_domain_create("ok", bad_rights[i], 0), EINVAL,
			       "rights %d", bad_rights[i]);
	for (size_t i = 0; i < sizeof(bad_flags) / sizeof(*bad_flags); i++)
		CHECK_ERR_CASE(mpk_domain_create("ok", MPK_RW, bad_flags[i]), EINVAL,
			       "flags %#x", bad_flags[i]);
	/* Everything bad at once still reports EINVAL. */
	CHECK_ERR(mpk_domain_create("", 2, 1), EINVAL);

	CHECK(t_domains() == domains);
	CHECK(t_keys_in_use() == keys);
	CHECK(t_mprotects() == mp);
	CHECK(t_intact(p, page, 1));
	CHECK_RIGHTS(w, p, MPK_READ);

	/* The limits are where the header says: 63 printable characters,
	 * spaces and punctuation included, are a good name. */
	mpk_domain *d = mpk_domain_create(longest, MPK_NONE, 0);
	CHECK(d && !strcmp(mpk_domain_name(d), longest));
	CHECK(!d || mpk_domain_destroy(d) == 0);
	d = mpk_domain_create(" ~!{tls keys}~ ", MPK_NONE, 0);
	CHECK(d && !strcmp(mpk_domain_name(d), " ~!{tls keys}~ "));
	CHECK(!d || mpk_domain_destroy(d) == 0);

	CHECK(mpk_domain_destroy(w) == 0);
	return t_done();
}
