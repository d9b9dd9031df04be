/* Pitfall, closed: a thread created inside MPK_WITH through
 * mpk_thread_create() starts with every domain closed, so its read of the
 * secret faults, before and after lockdown (hw: while the creator is
 * still inside its scope; soft: after, the union having closed). */
#include "t_pit.h"
#include <pthread.h>

static pthread_barrier_t bar;
static char got[64];
static bool hw;

static void *reader(void *arg)
{
	(void)arg;
	if (!hw)
		pthread_barrier_wait(&bar);
	memcpy(got, pit_secret, sizeof(PIT_SECRET));
	if (hw)
		pthread_barrier_wait(&bar);
	return NULL;
}

static int attempt(void)
{
	pthread_t t;
	hw = mpk_backend() == MPK_BACKEND_HW;
	pthread_barrier_init(&bar, NULL, 2);
	MPK_WITH(pit_dom, MPK_READ) {
		if (mpk_thread_create(&t, NULL, reader, NULL))
			return O_ERROR;
		if (hw)
			pthread_barrier_wait(&bar);
	}
	if (!hw)
		pthread_barrier_wait(&bar);
	pthread_join(t, NULL);
	return pit_copy_outcome(0, 0, got);
}

int main(void)
{
	struct pit p = { "thread via mpk_thread_create", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_FAULT), B(O_FAULT) }, { B(O_FAULT), B(O_FAULT) }, NULL };
	return pit_main(&p);
}
