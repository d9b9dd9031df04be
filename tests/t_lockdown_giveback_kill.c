/*
 * After mpk_lockdown(0), what mpkit gives back stays mpkit's while the
 * filter covers it, and nothing the program maps afterwards is refused:
 * the process is not killed (SIGSYS) in 1,000 rounds of every kind of
 * object made and given back, thread creation and the program's own
 * mappings, some at addresses mpkit just gave back (kit/t_giveback.c).
 * The heap metadata area is closed: a domain of its own, in the windows.
 */
#include "t_giveback.h"

int main(void)
{
	t_giveback_child(t_giveback_run, 0, "closed");
	return t_done();
}
