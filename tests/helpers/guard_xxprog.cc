// SPDX-License-Identifier: MIT
// guard-xxprog MODE: t_guard_unwind's program, which knows nothing of
// mpkit, links libguardxx.so and has exceptions and forced unwinds cross
// its exports:
//   throw     the library throws, the program catches;
//   callback  a callback throws through the library's frames;
//   nested    library, callback, library again, which throws: out
//             through both gates; and caught in the callback, inside the
//             outer call, which writes the state there (allowed);
//   uncaught  the library throws and nothing catches: terminate();
//   cancel    pthread_cancel() of a thread blocked inside the library;
//   exit      pthread_exit() from a callback called by the library.
// Each runs more times than the gate's shadow stack is deep (1024), so a
// frame left on it would abort the run, prints what ran (the library's
// destructors counted, the program's cleanup handlers), then writes the
// library's state from outside: under mpkit guard the domain is closed
// again, and the write faults.
#include <pthread.h>
#include <stdexcept>
#include <stdio.h>
#include <string.h>
#include <string>
#include <unistd.h>

#include "guard_xx.h"

static const int rounds = 1500;

static long cb_throw(long v)
{
	throw std::string("thrown by the callback ") + std::to_string(v);
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
	for (int i = 0; i < rounds; i++) {
		pthread_t t;
		void *r;
		char b;
		if (pthread_create(&t, nullptr, fn, nullptr))
			_exit(3);
		if (fn == blocker) {
			if (read(ready_pipe[0], &b, 1) != 1 || pthread_cancel(t))
				_exit(3);
		}
		if (pthread_join(t, &r))
			_exit(3);
		got += r == PTHREAD_CANCELED ? 1 : (long)r;
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
	} else if (!strcmp(mode, "cancel")) {
		if (pipe(ready_pipe) || pipe(block_pipe))
			return 3;
		threads(blocker, "cancelled");
	} else if (!strcmp(mode, "exit")) {
		threads(exiter, "exited");
	} else {
		fprintf(stderr, "usage: guard-xxprog throw|callback|nested|uncaught|cancel|exit\n");
		return 2;
	}
	if (caught)
		printf("caught %d: %s, undone %ld\n", caught, last.c_str(), x_undone());
	fflush(stdout);
	*x_ptr() += 1; // from outside: faults under mpkit guard
	printf("wrote after the unwinds %ld\n", *x_ptr());
	return 0;
}
