// SPDX-License-Identifier: MIT
// libguardxx.so, the C++ library t_guard_unwind guards: exceptions thrown
// in it, and through it from the program's callbacks, with a destructor
// of its own in every frame they cross (counted in its state).
#include <stdexcept>
#include <string>
#include <unistd.h>

#include "guard_xx.h"

// The state fills a page of its own, as libguardtest.so's does.
static struct {
	long state;
	long undone;
	char rest[4096 - 2 * sizeof(long)];
} own __attribute__((section(".data"), aligned(4096)));

namespace {
struct counted {
	~counted() { own.undone++; }
};
}

long x_throw(long v)
{
	counted c;
	own.state += v;
	throw std::runtime_error("thrown in the library " + std::to_string(own.state));
}

long x_apply(long (*cb)(long), long v)
{
	counted c;
	own.state += v;
	return cb(v) + 0; // not a tail call: this frame stays
}

long x_undone(void)
{
	return own.undone;
}

long *x_ptr(void)
{
	return &own.state;
}

long x_wait(int fd, void (*ready)(void))
{
	counted c;
	char b;
	ready();
	return read(fd, &b, 1) + 0;
}
