// SPDX-License-Identifier: MIT
// guard-xxprog MODE: t_guard_unwind's program, which knows nothing of
// mpkit, links libguardxx.so and has exceptions and forced unwinds cross
// its exports:
//   throw     the library throws, the program catches;
//   callback  a callback throws through the library's frames;
//   first     a callback that the library calls first thing (a call the
//             patch moves aside) throws, and a function it calls so;
//   nested    library, callback, library again, which throws: out
//             through both gates; and caught in the callback, inside the
//             outer call, which writes the state there (allowed);
//   uncaught  the library throws and nothing catches: terminate();
//   cancel    pthread_cancel() of a thread inside the library, acted on
//             there (pthread_testcancel());
//   blocked   pthread_cancel() of a thread blocked in read() inside the
//             library (glibc unwinds from its signal handler);
//   exit      pthread_exit() from a callback called by the library.
// Each throw runs more times than the gate's shadow stack is deep (1024),
// so a frame left on it would abort the run; each mode prints what ran
// (the library's destructors counted, the program's cleanup handlers),
// then writes the library's state from outside: under mpkit guard the
// domain is closed again, and the write faults.
#include <pthread.h>
#include <sched.h>
#include <stdexcept>
#include <stdio.h>
#include <string.h>
#include <string>
#include <unistd.h>

#include "guard_xx.h"

// More than the shadow stack's entries; threads have one each: fewer.
static const int rounds = 1100, thread_rounds = 100;

static long cb_throw(long v)
{
	throw std::string("thrown by the callback ") + std::to_string(v);
}

static long cb_first(void)
{
	throw std::string("thrown first thing");
}

static long cb_nested(long v)
{
	return x_throw(v);
}

static long cb_catch(long v)
{
	try {
		x_throw(v);
	} catch (const std::runtime_error &e) {
		*x_ptr() += 100; // inside the outer call: the library's rights
		return 1;
	}
	return 0;
}

static int ready_pipe[2], block_pipe[2];
static int cleanups;

static void ready(void)
{
	if (write(ready_pipe[1], "r", 1) != 1)
		_exit(3);
}

// Inside the library: says so and waits until main has cancelled this
// thread, without a cancellation point (a write() here would be one: a
// cancellation that arrives during it is acted on at once, from glibc's
// signal handler, or after pthread_testcancel(), when the signal comes
// late).
static int inside, go;
static void ready_then_wait(void)
{
	__atomic_store_n(&inside, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void cleanup(void *)
{
	cleanups++;
}

static void *blocker(void *)
{
	void *r = nullptr;
	pthread_cleanup_push(cleanup, nullptr);
	x_wait(block_pipe[0], ready);
	pthread_cleanup_pop(0);
	return r; // not reached: cancelled inside
}

static void *tester(void *)
{
	void *r = nullptr;
	pthread_cleanup_push(cleanup, nullptr);
	x_test(ready_then_wait);
	pthread_cleanup_pop(0);
	return r; // not reached: cancelled inside
}

static long cb_exit(long v)
{
	pthread_exit((void *)v);
}

static void *exiter(void *)
{
	void *r = nullptr;
	pthread_cleanup_push(cleanup, nullptr);
	x_apply(cb_exit, 42);
	pthread_cleanup_pop(0);
	return r; // not reached: exited inside
}

// A thread that ends inside the library, rounds times: how each ended,
// and the cleanup handlers that ran outside it.
static void threads(void *(*fn)(void *), const char *what)
{
	long got = 0;
	for (int i = 0; i < thread_rounds; i++) {
		pthread_t t;
		void *r;
		char b;
		if (pthread_create(&t, nullptr, fn, nullptr))
			_exit(3);
		if (fn == blocker && (read(ready_pipe[0], &b, 1) != 1 || pthread_cancel(t)))
			_exit(3);
		if (fn == tester) {
			while (!__atomic_load_n(&inside, __ATOMIC_ACQUIRE))
				sched_yield();
			if (pthread_cancel(t))
				_exit(3);
			__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
		}
		if (pthread_join(t, &r))
			_exit(3);
		got += r == PTHREAD_CANCELED ? 1 : (long)r;
		__atomic_store_n(&inside, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&go, 0, __ATOMIC_RELEASE);
	}
	printf("%s %ld, cleanups %d, undone %ld\n", what, got, cleanups, x_undone());
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	std::string last;
	int caught = 0;

	if (!strcmp(mode, "throw")) {
		for (int i = 0; i < rounds; i++) {
			try {
				x_throw(1);
			} catch (const std::runtime_error &e) {
				last = e.what();
				caught++;
			}
		}
	} else if (!strcmp(mode, "callback")) {
		for (int i = 0; i < rounds; i++) {
			try {
				x_apply(cb_throw, i + 1);
			} catch (const std::string &e) {
				last = e;
				caught++;
			}
		}
	} else if (!strcmp(mode, "first")) {
		for (int i = 0; i < rounds; i++) {
			try {
				x_first(cb_first);
			} catch (const std::string &e) {
				last = e;
				caught++;
			}
			try {
				x_first_direct();
			} catch (const std::runtime_error &e) {
				last += std::string(", ") + e.what();
				caught++;
			}
		}
	} else if (!strcmp(mode, "nested")) {
		for (int i = 0; i < rounds; i++) {
			try {
				x_apply(cb_nested, 1);
			} catch (const std::runtime_error &e) {
				last = e.what();
				caught++;
			}
		}
		printf("inner %ld\n", x_apply(cb_catch, 1));
	} else if (!strcmp(mode, "uncaught")) {
		printf("throwing\n");
		fflush(stdout);
		x_throw(1);
		printf("not caught, yet here\n");
		return 0;
	} else if (!strcmp(mode, "cancel") || !strcmp(mode, "blocked")) {
		if (pipe(ready_pipe) || pipe(block_pipe))
			return 3;
		threads(mode[0] == 'c' ? tester : blocker, "cancelled");
	} else if (!strcmp(mode, "exit")) {
		threads(exiter, "exited");
	} else {
		fprintf(stderr, "usage: guard-xxprog throw|callback|first|nested|uncaught|cancel|blocked|exit\n");
		return 2;
	}
	if (caught)
		printf("caught %d: %s, undone %ld\n", caught, last.c_str(), x_undone());
	fflush(stdout);
	*x_ptr() += 1; // from outside: faults under mpkit guard
	printf("wrote after the unwinds %ld\n", *x_ptr());
	return 0;
}
