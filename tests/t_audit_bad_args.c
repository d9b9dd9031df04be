/* SPDX-License-Identifier: MIT */
/*
 * mpk_audit() and mpk_audit_format() check their arguments: out NULL with
 * room for entries is EINVAL (NULL with none counts, as snprintf() does),
 * max 0 writes nothing; a format of NULL, or into a NULL buffer with a
 * size, is EINVAL; a short buffer holds a terminated start of the line
 * and the length of all of it comes back.  When mpkit cannot start, the
 * audit fails with mpk_init()'s error.
 */
#include "t.h"

static void cannot_start(void)
{
	struct mpk_audit_entry e[1];
	setenv("MPKIT_BACKEND", "bogus", 1);
	CHECK_ERR(mpk_audit(e, 1), EINVAL);
	CHECK_ERR(mpk_audit(NULL, 0), EINVAL);
}

int main(void)
{
	struct mpk_audit_entry e[2], none;
	char buf[256], small[8];

	t_in_child(cannot_start, "bad MPKIT_BACKEND");
	CHECK_ERR(mpk_audit(NULL, 1), EINVAL);
	CHECK(mpk_audit(NULL, 0) == 0);
	memset(e, 0x5a, sizeof(e));
	CHECK(mpk_audit(e, 0) == 0);
	CHECK(((unsigned char *)e)[0] == 0x5a);

	/* a made-up entry to format */
	memset(&none, 0, sizeof(none));
	none.start = (void *)0x10000;
	none.end = (void *)0x12000;
	none.expected_key = -1;
	none.expected_prot = PROT_NONE;
	none.found_key = -1;
	none.found_prot = PROT_READ | PROT_WRITE;
	errno = 0;
	CHECK(mpk_audit_format(NULL, buf, sizeof(buf)) == 0 && errno == EINVAL);
	errno = 0;
	CHECK(mpk_audit_format(&none, NULL, 5) == 0 && errno == EINVAL);
	size_t len = mpk_audit_format(&none, buf, sizeof(buf));
	CHECK(len == strlen(buf) && len > 0);
	CHECK(strstr(buf, "reserved by mpkit") && strstr(buf, "expected --- any key, found rw-"));
	CHECK(mpk_audit_format(&none, NULL, 0) == len);
	CHECK(mpk_audit_format(&none, small, sizeof(small)) == len);
	CHECK(strlen(small) == sizeof(small) - 1 && !strncmp(small, buf, sizeof(small) - 1));
	return t_done();
}
