# mpkit: one non-recursive make (this file and the fragments in mk/ it
# includes).  `make` builds into build/.
#   make            library (static + shared) and the mpkit CLI
#   make demo       build and run examples/demo
#   make check      the layer, export and man page checks, the native test
#                   suite, then the same tests in a PKU VM
#   make check-malloc  the native suite under the drop-in allocator
#   make benchmarks build every benchmark program (bench/); `make` does not
#   make bench      build them and run the main one (table on stdout, CSV, JSON
#                   and SVG in build/bench/); BENCH_ARGS="--sizes 4K,2M" passes options
#   make bench-alloc  heaps against glibc malloc, vaults against libsodium
#   make bench-rss  a heap's peak RSS against glibc, jemalloc and mimalloc
#   make bench-malloc  real programs (python3, sqlite3, git, gcc, xz, zstd,
#                   sort) under glibc, jemalloc, mimalloc and the drop-in
#   make bench-guard  real programs with a library guarded (mpkit guard)
#                   against unguarded
#   make install PREFIX=/usr/local   (also the man pages, into $(MANDIR),
#                   and docs/*.md, into $(DOCDIR)); DESTDIR stages it; make
#                   uninstall removes the same files
#   make dist       mpkit-VERSION.tar.gz;  make distcheck builds that tarball
#                   by itself with extra CFLAGS, runs its checks, installs
#                   and uninstalls it
# SANITIZE=address,undefined builds everything with those sanitizers into
# build/san/ (and `make check` then runs the native suite only).
# SODIUM=, OPENSSL=auto|yes|no: the benchmarks' libsodium and OpenSSL rows
# (auto: where pkg-config finds the library; yes: required).
# CFLAGS, CPPFLAGS and LDFLAGS from the command line add to the flags mpkit
# needs (MPK_CFLAGS, MPK_LDFLAGS); they never replace them.
#
# This file is the configuration: install directories, the package groups
# a goal needs, the toolchain and its flags, what the machine has (the C
# library, the optional libraries), and the rules that compile every
# object.  The rest is in mk/, each fragment a part of the tree, included
# in this order (later ones use the earlier ones' lists):
#   mk/lib.mk       the library by layer, the mpkit command, the watch
#                   helper and the drop-in allocator (libmpkit-malloc.so)
#   mk/examples.mk  the demo, the JIT example, the use cases
#   mk/bench.mk     the benchmark programs and the bench goals
#   mk/tests.mk     the tests, the files they run, the check goals
#   mk/install.mk   install, uninstall, the man pages, pkg-config and CMake
#                   files, the tests of the installed copy, check-cmake
#   mk/dist.mk      the release: dist, distcheck, check-deb, abi-check

PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib
INCDIR  ?= $(PREFIX)/include
BINDIR  ?= $(PREFIX)/bin
LIBEXECDIR ?= $(PREFIX)/libexec
CMAKEDIR ?= $(LIBDIR)/cmake/mpkit
PCDIR   ?= $(LIBDIR)/pkgconfig
MANDIR  ?= $(PREFIX)/share/man
DOCDIR  ?= $(PREFIX)/share/doc/mpkit
DESTDIR ?=

# What a fresh Debian machine lacks for the goals (tools/deps.sh, the one
# list that .ci/run installs too): `make demo` the build group, the test
# targets the test group as well, the benchmarks (`make bench`, `make
# bench-*`) the bench group too (gnuplot for the plots; jemalloc, mimalloc).  As root they are installed here, before
# the probes below run the compiler (without gcc the C library would be
# taken for another than glibc) and pkg-config; otherwise make stops with
# one line naming them.  DEPS=no checks nothing (the Debian package build:
# its Build-Depends say what it has).
DEPS ?= yes
DEPS_GROUPS := $(strip $(if $(filter demo check check-native check-vm tests example-% bench bench-%,$(MAKECMDGOALS)),build) \
	$(if $(filter check check-native check-vm tests example-% bench bench-%,$(MAKECMDGOALS)),test) \
	$(if $(filter bench bench-%,$(MAKECMDGOALS)),bench))
ifeq ($(DEPS),yes)
ifneq ($(DEPS_GROUPS),)
DEPS_MSG := $(shell out=$$(tools/deps.sh $(DEPS_GROUPS)) || echo "$${out:-tools/deps.sh $(DEPS_GROUPS) failed}")
ifneq ($(DEPS_MSG),)
$(error $(DEPS_MSG))
endif
endif
endif

CC      ?= cc
VERSION := $(shell sed -n 's/^#define MPK_VERSION_STRING "\(.*\)"/\1/p' include/mpkit.h)
SONAME  := libmpkit.so.0

BUILD ?= build
B := $(BUILD)$(if $(SANITIZE),/san)

# The user's CFLAGS/LDFLAGS come last, so they can add and override
# optimisation and hardening but never drop -Iinclude or -pthread.
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-missing-field-initializers
CFLAGS  ?= -O2 -g
MPK_CFLAGS  := -std=gnu11 $(WARN) -pthread -Iinclude
# clang's DWARF 5 (strx/addrx forms) is more than Debian 12's valgrind
# 3.19 reads (t_heap_valgrind): DWARF 4 with clang.
MPK_CFLAGS  += $(if $(shell $(CC) --version 2>/dev/null | grep -q clang && echo y),-gdwarf-4)
MPK_LDFLAGS := -pthread
# The C library, probed: glibc, or another (musl: musl-gcc).  musl-gcc
# searches musl's headers only, and they leave the kernel's (linux/,
# asm/) to the system: a directory in the build tree points at the
# system's, and at valgrind's client requests (macros only), and nothing
# else of glibc's is seen.
LIBC := $(if $(shell printf '\043include <features.h>\n\043ifdef __GLIBC__\nglibc\n\043endif\n' | \
	$(CC) -E -P -x c - 2>/dev/null | grep -x glibc),glibc,other)
KHDR := $(if $(shell printf '\043include <linux/futex.h>\n' | $(CC) -E -x c - >/dev/null 2>&1 || echo no),$(abspath $(BUILD))/kernel-headers)
ifneq ($(KHDR),)
$(shell mkdir -p $(KHDR) && for d in linux asm-generic valgrind; do ln -sfn /usr/include/$$d $(KHDR)/$$d; done && \
	ln -sfn /usr/include/$$(gcc -print-multiarch)/asm $(KHDR)/asm)
MPK_CFLAGS  += -isystem $(KHDR)
endif
# musl-gcc's link spec leaves out the unwind tables' index, without which
# the unwinder cannot run: reports would have no backtrace.
MPK_LDFLAGS += $(if $(filter glibc,$(LIBC)),,-Wl,--eh-frame-hdr)
ifneq ($(SANITIZE),)
MPK_CFLAGS  += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
MPK_LDFLAGS += -fsanitize=$(SANITIZE)
endif
DEPFLAGS = -MMD -MP
ALL_CFLAGS  = $(MPK_CFLAGS) $(MPK_XCFLAGS) $(CPPFLAGS) $(CFLAGS)
ALL_LDFLAGS = $(MPK_LDFLAGS) $(LDFLAGS)

# The benchmark's libsodium rows: SODIUM=auto (default) uses libsodium when
# pkg-config finds it, SODIUM=yes requires it, SODIUM=no leaves it out.  The
# library and the mpkit command never link it.
SODIUM ?= auto
# pkg-config's libraries are Debian's, built for glibc: a build for another
# C library (musl) uses none of them, and their tests skip saying so.
PKG_CONFIG := $(if $(filter glibc,$(LIBC)),pkg-config,false)
opt_why = $(if $(filter glibc,$(LIBC)),pkg-config found none; tools/deps.sh test installs $(1),the C library is not glibc and Debian builds $(1) for glibc)
ifeq ($(SODIUM),no)
SODIUM_OK :=
else
SODIUM_OK := $(shell $(PKG_CONFIG) --exists libsodium 2>/dev/null && echo yes)
ifeq ($(SODIUM)$(SODIUM_OK),yes)
$(error SODIUM=yes but pkg-config finds no libsodium (apt-get install libsodium-dev))
endif
endif
ifeq ($(SODIUM_OK),yes)
BENCH_CPPFLAGS := -DMPKIT_BENCH_SODIUM $(shell $(PKG_CONFIG) --cflags libsodium)
BENCH_LIBS     := $(shell $(PKG_CONFIG) --libs libsodium)
endif
# The vault benchmark's OpenSSL secure-heap rows: OPENSSL=auto (default)
# when pkg-config finds libcrypto (libssl-dev), OPENSSL=yes requires it,
# OPENSSL=no leaves them out; without it those rows say why they are
# missing.  A package build says which (debian/rules: yes), so that its
# dependencies do not depend on what the build machine has.
OPENSSL ?= auto
ifeq ($(filter auto yes no,$(OPENSSL)),)
$(error OPENSSL=$(OPENSSL): auto, yes or no)
endif
ifeq ($(OPENSSL),no)
OPENSSL_OK :=
else
OPENSSL_OK := $(shell $(PKG_CONFIG) --exists libcrypto 2>/dev/null && echo yes)
ifeq ($(OPENSSL)$(OPENSSL_OK),yes)
$(error OPENSSL=yes but pkg-config finds no libcrypto (apt-get install libssl-dev))
endif
endif
ifeq ($(OPENSSL_OK),yes)
BENCH_VAULT_CPPFLAGS := -DMPKIT_BENCH_OPENSSL $(shell $(PKG_CONFIG) --cflags libcrypto)
BENCH_VAULT_LIBS     := $(shell $(PKG_CONFIG) --libs libcrypto)
endif
SODIUM_CFLAGS := $(shell $(PKG_CONFIG) --cflags libsodium 2>/dev/null)
SODIUM_LIBS   := $(shell $(PKG_CONFIG) --libs libsodium 2>/dev/null)

# The use-case examples (docs/examples.md) need libsodium and SQLite.
SQLITE_OK     := $(shell $(PKG_CONFIG) --exists sqlite3 2>/dev/null && echo yes)
SQLITE_CFLAGS := $(shell $(PKG_CONFIG) --cflags sqlite3 2>/dev/null)
SQLITE_LIBS   := $(shell $(PKG_CONFIG) --libs sqlite3 2>/dev/null)
# What this machine gave the build that changes what it compiles: the
# optional libraries, and valgrind's client-request header (src/heap/san.h
# uses it where it is there).  Every object depends on $(B)/config,
# rewritten only when that changes, so a package installed after a build
# (make check's after make demo's) rebuilds what it changes.  text= names
# how the library's objects are compiled for src/libmpkit-hot.ld (a build
# tree from before it is rebuilt).
CONFIG := sodium=$(SODIUM_OK) openssl=$(OPENSSL_OK) sqlite=$(SQLITE_OK) text=function-sections \
	valgrind=$(shell printf '\043include <valgrind/memcheck.h>\n' | \
	$(CC) $(if $(KHDR),-isystem $(KHDR)) $(CPPFLAGS) -E -x c - >/dev/null 2>&1 && echo yes)
$(shell mkdir -p $(B) && [ "$$(cat $(B)/config 2>/dev/null)" = '$(CONFIG)' ] || echo '$(CONFIG)' > $(B)/config)

# `make`: the first goal, defined before the fragments' rules.
ALL_BIN := $(B)/libmpkit.a $(B)/libmpkit.so $(B)/mpkit $(B)/libmpkit-watch.so $(B)/libmpkit-guard.so $(B)/libmpkit-malloc.so \
	   $(B)/examples/jit
all: $(ALL_BIN)

# ---- compiling ----
# Every object comes from one of three rules: $(B)/obj/ (static),
# $(B)/pic/ (the shared library), $(B)/preload/ (what goes into other
# programs, below).  Then what each directory's objects see.

$(B)/obj/%.o: %.c $(B)/config
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fvisibility=hidden $(DEPFLAGS) -c $< -o $@

$(B)/pic/%.o: %.c $(B)/config
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fPIC -fvisibility=hidden $(DEPFLAGS) -c $< -o $@

# The library keeps its own NULL checks: include/mpkit.h's nonnull
# attributes would let the compiler delete them (MPK_NO_NONNULL there).
$(B)/obj/src/%.o $(B)/pic/src/%.o $(B)/preload/src/%.o: MPK_XCFLAGS += -DMPK_NO_NONNULL
# What goes into programs built without sanitizers (`mpkit watch`'s
# LD_PRELOAD helper, the drop-in allocator, the tests' helper programs) is
# built without them, and in a sanitizer build it links a library built
# without them too ($(B)/preload/, from the objects the static scan test
# links: mk/lib.mk).
PRELOAD_CFLAGS = $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(ALL_CFLAGS))
PRELOAD_LDFLAGS = $(filter-out -fsanitize=%,$(ALL_LDFLAGS))
$(B)/preload/%.o: %.c $(B)/config
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_CFLAGS) -fPIC -fvisibility=hidden $(DEPFLAGS) -c $< -o $@
# Besides include/: tools, tests, examples and benchmarks see the test
# kit's headers (tests/), benchmarks their own.
$(B)/obj/tools/%.o $(B)/obj/tests/%.o $(B)/obj/examples/%.o $(B)/obj/bench/%.o: MPK_XCFLAGS += -Itests
$(B)/obj/bench/%.o $(B)/obj/tests/t_bench_smoke.o: MPK_XCFLAGS += -Ibench $(BENCH_CPPFLAGS)
# Tools and benchmarks see the public header and src/shared/ only: the
# command reads the environment through the library's own parser
# (env.h), the registry's layout and the scanner from there.
$(B)/obj/bench/%.o $(B)/obj/tools/%.o: MPK_XCFLAGS += -Isrc/shared

include mk/lib.mk mk/examples.mk mk/bench.mk mk/tests.mk mk/install.mk mk/dist.mk

clean:
	rm -rf build mpkit.pc mpkit-*.tar.gz

.PHONY: all clean
.SECONDARY:

# (not in tests/minroot/run.sh's Debian root, a tree of its own)
-include $(shell find $(BUILD) -path '$(BUILD)/minroot' -prune -o -name '*.d' -print 2>/dev/null)
