/*
 * After mpk_lockdown(MPK_LOCK_ERRNO), what mpkit gives back stays mpkit's
 * while the filter covers it, and nothing the program maps afterwards is
 * refused: no EPERM, in 1,000 rounds of every kind of object made and
 * given back, thread creation and the program's own mappings, some at
 * addresses mpkit just gave back (kit/t_giveback.c).  The heap metadata
 * area is open: plain memory apart from the windows, which the last heap
 * takes along and the next reuses.
 */
#include "t_giveback.h"

int main(void)
{
	t_giveback_child(t_giveback_run, MPK_LOCK_ERRNO, "open");
	return t_done();
}
