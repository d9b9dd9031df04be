/*
 * The version three ways agree (issue 34, item 9): the header's
 * MPK_VERSION_NUMBER is MAJOR * 10000 + MINOR * 100 + PATCH of its macros
 * and of MPK_VERSION_STRING; the loaded library's mpk_version_number() is
 * the number of its mpk_version() string, and (built together) the
 * header's.  Each part stays below 100, so the numbers order as versions do.
 */
#include "t.h"

/* "X.Y.Z" as MAJOR * 10000 + MINOR * 100 + PATCH, or -1. */
static int number_of(const char *s)
{
	int major, minor, patch, end = 0;

	if (sscanf(s, "%d.%d.%d%n", &major, &minor, &patch, &end) != 3 || s[end] || major < 0 ||
	    minor < 0 || minor > 99 || patch < 0 || patch > 99)
		return -1;
	return major * 10000 + minor * 100 + patch;
}

int main(void)
{
	CHECK(MPK_VERSION_NUMBER == MPK_VERSION_MAJOR * 10000 + MPK_VERSION_MINOR * 100 + MPK_VERSION_PATCH);
	if (number_of(MPK_VERSION_STRING) != MPK_VERSION_NUMBER)
		t_fail("MPK_VERSION_STRING \"%s\" is not MPK_VERSION_NUMBER %d", MPK_VERSION_STRING,
		       MPK_VERSION_NUMBER);

	int n = mpk_version_number();
	if (n <= 0 || n != number_of(mpk_version()))
		t_fail("mpk_version_number() %d, mpk_version() \"%s\"", n, mpk_version());
	if (n != MPK_VERSION_NUMBER)
		t_fail("library %d, header %d (built together)", n, MPK_VERSION_NUMBER);
#if MPK_VERSION_NUMBER < 100
#error "MPK_VERSION_NUMBER is not usable in #if"
#endif
	return t_done();
}
