/* Pitfall: core dumps.  mpk_alloc() memory is dumped (no VM_DONTDUMP) and
 * the process is dumpable; MADV_DODUMP undoes a vault's DONTDUMP.  After
 * lockdown: dumpable 0, every domain region is "dd" in smaps, and
 * MADV_DODUMP fails with EPERM. */
#include "t_pit.h"
#include <sys/prctl.h>

/* The VmFlags of the smaps entry holding p contain "dd". */
static int dontdump(const void *p)
{
	char line[512];
	int in = 0, dd = -1;
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, ' ') == line + strcspn(line, " "))
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
		else if (in && !strncmp(line, "VmFlags:", 8)) {
			dd = strstr(line, " dd") != NULL;
			break;
		}
	}
	fclose(f);
	return dd;
}

static int attempt(void)
{
	int dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), dd = dontdump(pit_secret);
	if (dd < 0)
		return O_ERROR;
	if (dumpable && !dd)
		return O_LEAKED; /* a core would hold the secret */
	if (dumpable || !dd)
		return O_ERROR;  /* half done */
	if (madvise(pit_secret, 4096, MADV_DODUMP) == 0 || errno != EPERM)
		return O_ERROR;
	return O_NODUMP;
}

int main(void)
{
	struct pit p = { "core dump / MADV_DODUMP", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_LEAKED) }, { B(O_NODUMP), B(O_NODUMP) }, NULL };
	return pit_main(&p);
}
