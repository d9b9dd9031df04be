/* Pitfall: a thread created inside MPK_WITH inherits the open rights (hw:
 * new threads copy the creator's PKRU), and keeps them after the creator's
 * scope ends.  Lockdown does not change it (mpkit cannot see
 * pthread_create): mpk_thread_create() is the way (t_pit_thread_wrapped).
 * On soft the new thread holds nothing of its own and the union closes
 * with the creator's scope. */
#include "t_pit.h"
#include <pthread.h>

static pthread_barrier_t bar;
static char got[64];

static void *reader(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&bar); /* the creator left its scope */
	memcpy(got, pit_secret, sizeof(PIT_SECRET));
	return NULL;
}

static int attempt(void)
{
	pthread_t t;
	pthread_barrier_init(&bar, NULL, 2);
	MPK_WITH(pit_dom, MPK_READ) {
		if (pthread_create(&t, NULL, reader, NULL))
			return O_ERROR;
	}
	pthread_barrier_wait(&bar);
	pthread_join(t, NULL);
	return pit_copy_outcome(0, 0, got);
}

int main(void)
{
	struct pit p = { "thread born in MPK_WITH", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_FAULT) }, { B(O_LEAKED), B(O_FAULT) },
			 "use mpk_thread_create (t_pit_thread_wrapped)" };
	return pit_main(&p);
}
