/* Built against the installed copy (pkg-config --cflags --libs mpkit) and
 * linked to its shared library: the public API works from outside. */
#include <stdio.h>
#include <string.h>

#include <mpkit.h>

int main(void)
{
	if (strcmp(mpk_version(), MPK_VERSION_STRING) || mpk_version_number() != MPK_VERSION_NUMBER) {
		fprintf(stderr, "header %s (%d), library %s (%d)\n", MPK_VERSION_STRING, MPK_VERSION_NUMBER,
			mpk_version(), mpk_version_number());
		return 1;
	}
	mpk_domain *d = mpk_domain_create("installed", MPK_RW, 0);
	if (!d)
		return 1;
	int *p = mpk_alloc(d, sizeof(int));
	if (!p)
		return 1;
	*p = 42;
	MPK_WITH(d, MPK_READ) {
		if (*p != 42 || mpk_get(d) != MPK_READ)
			return 1;
	}
	if (mpk_get(d) != MPK_RW)
		return 1;
	return mpk_domain_destroy(d) ? 1 : 0;
}
