/* Pitfall: soft's process-wide rights.  While another thread holds the
 * domain open, every thread can read it (a page protection is the
 * process's).  No user-space measure changes that: documented; on hw the
 * other thread's rights are its own and the read faults. */
#include "t_pit.h"
#include <pthread.h>

static pthread_barrier_t opened, done;

static void *holder(void *arg)
{
	(void)arg;
	MPK_WITH(pit_dom, MPK_READ) {
		pthread_barrier_wait(&opened);
		pthread_barrier_wait(&done);
	}
	return NULL;
}

static int attempt(void)
{
	char buf[64] = { 0 };
	pthread_t t;
	pthread_barrier_init(&opened, NULL, 2);
	pthread_barrier_init(&done, NULL, 2);
	if (pthread_create(&t, NULL, holder, NULL))
		return O_ERROR;
	pthread_barrier_wait(&opened);
	memcpy(buf, pit_secret, sizeof(PIT_SECRET));
	pthread_barrier_wait(&done);
	pthread_join(t, NULL);
	return pit_copy_outcome(0, 0, buf);
}

int main(void)
{
	struct pit p = { "another thread holds it", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_FAULT), B(O_LEAKED) }, { B(O_FAULT), B(O_LEAKED) },
			 "soft: rights are process-wide" };
	return pit_main(&p);
}
