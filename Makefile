# mpkit: one non-recursive Makefile.  `make` builds into build/.
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

# The library's sources by layer, bottom to top (docs/guide.md, Layout;
# tests/check-layers.sh keeps includes and calls pointing down).
ARCH := $(shell uname -m)
ifeq ($(ARCH),x86_64)
ARCH_SRC := src/arch/x86/cpu.c src/arch/x86/frames.c
else
ARCH_SRC := src/arch/none/cpu.c
endif
# Code and formats the library shares with the tools (libc only).
SHARED_SRC := src/shared/procmaps.c src/shared/scan.c src/shared/scan_class.c src/shared/scan_expr.c src/shared/insn.c src/shared/insn_0f.c \
              src/shared/mapcheck.c src/shared/unwind.c src/shared/env.c src/shared/trace.c
CORE_SRC := $(addprefix src/core/,init.c os.c os_signal.c domain.c region.c window.c secretmem.c \
            memory.c owned.c code_region.c rights.c soft.c broadcast.c thread.c thread_start.c fork.c \
            fault.c hooks.c backtrace.c report.c registry.c audit.c ialloc.c sort.c)
HEAP_SRC := $(addprefix src/heap/,meta.c map.c run.c big.c heap.c calls.c misuse.c cache.c fork.c vault.c vlist.c)
LOCKDOWN_SRC := $(addprefix src/lockdown/,lockdown.c lockdown_bpf.c lockdown_exec.c landlock.c)
FEATURE_SRC := src/features/code.c src/features/watch.c
LIB_SRC := $(ARCH_SRC) $(SHARED_SRC) $(CORE_SRC) $(HEAP_SRC) $(LOCKDOWN_SRC) $(FEATURE_SRC)
LIB_OBJ := $(LIB_SRC:%.c=$(B)/obj/%.o)
PIC_OBJ := $(LIB_SRC:%.c=$(B)/pic/%.o)

TEST_SRC := $(sort $(wildcard tests/t_*.c))
TEST_BIN := $(TEST_SRC:tests/%.c=$(B)/tests/%)
# The test kit (tests/t.c, tests/kit/*.c), compiled once per build
# directory into a static library every test program links.
KIT_SRC  := tests/t.c $(sort $(wildcard tests/kit/*.c))
KIT_LIB  := $(B)/obj/tests/libt.a
EX_SRC   := $(wildcard examples/*.c)
EX_BIN   := $(EX_SRC:examples/%.c=$(B)/examples/%)

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

# The use-case examples (docs/examples.md) need libsodium and SQLite; the
# copies in $(B)/tests/ex/ are what their tests run (and the VM packs).
SQLITE_OK     := $(shell $(PKG_CONFIG) --exists sqlite3 2>/dev/null && echo yes)
SQLITE_CFLAGS := $(shell $(PKG_CONFIG) --cflags sqlite3 2>/dev/null)
SQLITE_LIBS   := $(shell $(PKG_CONFIG) --libs sqlite3 2>/dev/null)
EX_TEST_BIN   := $(if $(SODIUM_OK),$(B)/tests/ex/keyd $(B)/tests/ex/attack) \
                 $(if $(SQLITE_OK),$(B)/tests/ex/sqlite-guard $(B)/mpkit-bench-sqlite) \
                 $(B)/tests/ex/pstore
# A test whose optional library pkg-config did not find (or that a musl
# build cannot use) is a script that skips, naming the library and why:
# the other tests build and run (make check installs the library first,
# so this is DEPS=no, not Debian, or musl).  Dated
# 1970, so that the real test is linked over it once the library is there.
skip_test = @mkdir -p $(@D) && \
	printf '\043!/bin/sh\necho "skip: built without %s (%s)"\nexit 77\n' \
		'$(1)' '$(call opt_why,$(2))' > $@ && chmod 755 $@ && touch -d @0 $@ && echo "$(@F): built without $(1), it will skip"
# What this machine gave the build that changes what it compiles: the
# optional libraries, and valgrind's client-request header (src/heap/san.h
# uses it where it is there).  Every object depends on $(B)/config,
# rewritten only when that changes, so a package installed after a build
# (make check's after make demo's) rebuilds what it changes.
CONFIG := sodium=$(SODIUM_OK) openssl=$(OPENSSL_OK) sqlite=$(SQLITE_OK) valgrind=$(shell printf '\043include <valgrind/memcheck.h>\n' | \
	$(CC) $(if $(KHDR),-isystem $(KHDR)) $(CPPFLAGS) -E -x c - >/dev/null 2>&1 && echo yes)
$(shell mkdir -p $(B) && [ "$$(cat $(B)/config 2>/dev/null)" = '$(CONFIG)' ] || echo '$(CONFIG)' > $(B)/config)
# The formats the library shares with the tools (src/shared/): the mpkit
# command and the benchmarks link these objects of their own, never the
# library's internals.
SHARED_OBJ := $(B)/obj/src/shared/procmaps.o $(B)/obj/src/shared/mapcheck.o
BENCH_SRC := bench/options.c bench/engine.c bench/group.c bench/methods.c bench/sample.c bench/probe.c bench/gnuplot.c \
             bench/machine.c bench/extent.c bench/report.c bench/plot.c
BENCH_OBJ := $(BENCH_SRC:%.c=$(B)/obj/%.o) $(SHARED_OBJ) $(B)/obj/src/shared/dynsym.o $(B)/obj/src/shared/json.o
# Every benchmark program: `make benchmarks` (and bench, check, install)
# builds them, `make` does not.
BENCH_BIN := $(addprefix $(B)/,mpkit-bench mpkit-bench-alloc mpkit-bench-vault mpkit-bench-threads mpkit-bench-scale \
             mpkit-bench-broadcast mpkit-bench-lockdown mpkit-bench-code mpkit-bench-rss mpkit-bench-malloc) \
             $(if $(SQLITE_OK),$(B)/mpkit-bench-sqlite)

ALL_BIN := $(B)/libmpkit.a $(B)/libmpkit.so $(B)/mpkit $(B)/libmpkit-watch.so $(B)/libmpkit-malloc.so \
	   $(B)/examples/jit
all: $(ALL_BIN)

benchmarks: $(BENCH_BIN)

$(B)/obj/%.o: %.c $(B)/config
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fvisibility=hidden $(DEPFLAGS) -c $< -o $@

$(B)/pic/%.o: %.c $(B)/config
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fPIC -fvisibility=hidden $(DEPFLAGS) -c $< -o $@

# The library keeps its own NULL checks: include/mpkit.h's nonnull
# attributes would let the compiler delete them (MPK_NO_NONNULL there).
$(B)/obj/src/%.o $(B)/pic/src/%.o $(B)/preload/src/%.o: MPK_XCFLAGS += -DMPK_NO_NONNULL

$(B)/libmpkit.a: $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

# Hidden visibility keeps internals out; the version script is the list.
# $(call link_lib,LDFLAGS,OBJECTS): $@ and the SONAME link beside it.
link_lib = $(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=src/libmpkit.map \
		-Wl,-z,defs -Wl,-z,now $(1) $(2) -o $@ && ln -sf libmpkit.so $(@D)/$(SONAME)
$(B)/libmpkit.so: $(PIC_OBJ) src/libmpkit.map
	$(call link_lib,$(ALL_LDFLAGS),$(PIC_OBJ))

# Unit tests of internals: the scanner (src/shared/), the core's state.
$(B)/obj/tests/t_scan_%.o: MPK_XCFLAGS += -Isrc/shared
$(B)/obj/tests/t_soft_domain_lock.o: MPK_XCFLAGS += -Isrc/core
# Programs that use only the public API link libmpkit.so, so that a fixed
# libmpkit.so.0 reaches them.  In the build tree a RUNPATH naming $(B)
# finds it; make install links them again for their installed place (INST
# below).
SO_RPATH = -Wl,-rpath,$(abspath $(B))

# The mpkit command links libmpkit.so, and a copy of its own of two
# internal parts that no exported function gives: the scanner (`mpkit
# scan` runs the one mpk_lockdown() runs: src/shared/scan.h) and the environment
# parser (`mpkit info` judges each variable as the library does:
# src/shared/env.h).  Both are self-contained: the copy shares no state with the
# library.  tools/paths.c says where the helpers are (INST compiles it for
# the installed layout).
CLI_LIB_SRC := src/shared/scan.c src/shared/scan_class.c src/shared/scan_expr.c src/shared/insn.c src/shared/insn_0f.c src/shared/env.c
CLI_OBJ := $(addprefix $(B)/obj/tools/,mpkit.o cli.o info.o scan.o maps.o maps_check.o run.o watch.o watch_spec.o \
             watch_trace.o bench.o symbolize.o) $(CLI_LIB_SRC:%.c=$(B)/obj/%.o) $(SHARED_OBJ) $(B)/obj/src/shared/json.o
$(B)/mpkit: $(CLI_OBJ) $(B)/obj/tools/paths.o $(B)/libmpkit.so
	$(CC) $(ALL_LDFLAGS) $^ $(SO_RPATH) -o $@

$(B)/obj/tools/%.o $(B)/obj/tests/%.o $(B)/obj/examples/%.o $(B)/obj/bench/%.o: MPK_XCFLAGS += -Itests
$(KIT_LIB): $(KIT_SRC:%.c=$(B)/obj/%.o)
	@rm -f $@
	$(AR) rcs $@ $^
$(B)/obj/bench/%.o $(B)/obj/tests/t_bench_smoke.o: MPK_XCFLAGS += -Ibench $(BENCH_CPPFLAGS)
# Tools and benchmarks see the public header and src/shared/ only: the
# command reads the environment through the library's own parser
# (env.h), the registry's layout and the scanner from there.
$(B)/obj/bench/%.o $(B)/obj/tools/%.o: MPK_XCFLAGS += -Isrc/shared
$(B)/obj/tools/paths.o: MPK_XCFLAGS += -DMPKIT_DOCDIR='"$(abspath docs)"'

# `mpkit bench` runs this program, found next to the mpkit binary.  The
# installed benchmarks link libmpkit.so: they measure what a program
# linked to it gets.  Their link lines (objects, then libraries) are
# named, for INST to link them again.
BENCH_MAIN_OBJ := $(B)/obj/bench/main.o $(BENCH_OBJ)
BENCH_MAIN_LIBS = $(BENCH_LIBS) -lm
$(B)/mpkit-bench: $(BENCH_MAIN_OBJ) $(B)/libmpkit.so
	$(CC) $(ALL_LDFLAGS) $^ $(SO_RPATH) $(BENCH_MAIN_LIBS) -o $@

# Heaps and vaults against glibc malloc and libsodium (`make bench-alloc`).
BENCH_ALLOC_OBJ := $(B)/obj/bench/alloc.o $(B)/obj/bench/options.o
BENCH_ALLOC_LIBS = $(BENCH_LIBS)
$(B)/mpkit-bench-alloc: $(BENCH_ALLOC_OBJ) $(B)/libmpkit.so
	$(CC) $(ALL_LDFLAGS) $^ $(SO_RPATH) $(BENCH_ALLOC_LIBS) -o $@

# A heap's peak RSS against glibc's, jemalloc's and mimalloc's (`make bench-rss`).
$(B)/mpkit-bench-rss: $(B)/obj/bench/rss.o $(B)/obj/bench/options.o $(B)/libmpkit.so
	$(CC) $(ALL_LDFLAGS) $^ $(SO_RPATH) -o $@

# Real programs under glibc, jemalloc, mimalloc and the drop-in allocator
# (`make bench-malloc`; `mpkit bench malloc`).  Linked statically, so that
# make install copies it (it runs the drop-in it finds beside itself).
BENCH_MALLOC_OBJ := $(addprefix $(B)/obj/bench/,malloc.o malloc_run.o malloc_work.o gnuplot.o options.o)
$(B)/mpkit-bench-malloc: $(BENCH_MALLOC_OBJ) $(B)/libmpkit.a
	$(CC) $(ALL_LDFLAGS) $^ -lm -o $@

# Secrets against libsodium and OpenSSL's secure heap (`make bench-vault`).
BENCH_VAULT_OBJ := $(B)/obj/bench/vault.o $(B)/obj/bench/options.o
BENCH_VAULT_ALL_LIBS = $(BENCH_LIBS) $(BENCH_VAULT_LIBS) -pthread
$(BENCH_VAULT_OBJ): MPK_XCFLAGS += $(BENCH_VAULT_CPPFLAGS)
$(B)/mpkit-bench-vault: $(BENCH_VAULT_OBJ) $(B)/libmpkit.so
	$(CC) $(ALL_LDFLAGS) $^ $(SO_RPATH) $(BENCH_VAULT_ALL_LIBS) -o $@

# Rights changes for one thread and for all (mpk_set_all) against mprotect.
BENCH_THREADS_OBJ := $(B)/obj/bench/threads.o $(B)/obj/bench/options.o
BENCH_THREADS_LIBS = -pthread
$(B)/mpkit-bench-threads: $(BENCH_THREADS_OBJ) $(B)/libmpkit.so
	$(CC) $(ALL_LDFLAGS) $^ $(SO_RPATH) $(BENCH_THREADS_LIBS) -o $@

# What mpk_lockdown() costs: its own time, and the MPK_WITH loop before/after.
$(B)/mpkit-bench-lockdown: $(B)/obj/bench/lockdown.o $(BENCH_OBJ) $(B)/libmpkit.a
	$(CC) $(ALL_LDFLAGS) $^ $(BENCH_LIBS) -lm -o $@

# Lookups, faults, no-change sets, save/restore at scale (`make bench-scale`).
# Linked statically: it measures internals no exported function reaches
# (regions carved and registered in bulk, the broadcast's counters), which
# must be those of the copy it runs.
$(B)/mpkit-bench-scale: $(B)/obj/bench/scale.o $(B)/obj/bench/bcast.o $(BENCH_OBJ) $(B)/libmpkit.a
	$(CC) $(ALL_LDFLAGS) $^ $(BENCH_LIBS) -lm -pthread -o $@

# One broadcast with 1..16 threads: time, signals and system calls.
$(B)/mpkit-bench-broadcast: $(B)/obj/bench/broadcast.o $(B)/obj/bench/bcast.o $(B)/obj/bench/options.o $(B)/libmpkit.a
	$(CC) $(ALL_LDFLAGS) $^ -pthread -o $@

# The VM smoke test of the benchmark engine: tiny sizes, both backends.
$(B)/tests/t_bench_smoke: $(B)/obj/tests/t_bench_smoke.o $(BENCH_OBJ) $(KIT_LIB) $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(BENCH_LIBS) -lm -o $@

$(B)/tests/%: $(B)/obj/tests/%.o $(KIT_LIB) $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ -o $@
# It tells mpkit's code from the program's by the shared library's mapping;
# -rdynamic: its malloc is the one every library calls.  Its stacks come
# from src/shared/unwind.c (musl has no backtrace()).
$(B)/obj/tests/t_ialloc_no_malloc.o: MPK_XCFLAGS += -Isrc/shared
$(B)/tests/t_ialloc_no_malloc: $(B)/obj/tests/t_ialloc_no_malloc.o $(B)/obj/src/shared/unwind.o $(KIT_LIB) $(B)/libmpkit.so
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -rdynamic $^ $(SO_RPATH) -o $@

# -rdynamic: fault-report backtraces name the example's functions.
$(B)/examples/%: $(B)/obj/examples/%.o $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -rdynamic $^ -o $@

# `mpkit watch`'s LD_PRELOAD helper links libmpkit.so.  It goes into
# programs built without sanitizers, so it is built without them, and a
# sanitizer build links it to a library built without them too
# ($(B)/preload/, from the objects the static scan test links).
PRELOAD_CFLAGS = $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(ALL_CFLAGS))
PRELOAD_LDFLAGS = $(filter-out -fsanitize=%,$(ALL_LDFLAGS))
$(B)/preload/%.o: %.c $(B)/config
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_CFLAGS) -fPIC -fvisibility=hidden $(DEPFLAGS) -c $< -o $@
HELPER_LIB := $(if $(SANITIZE),$(B)/preload/libmpkit.so,$(B)/libmpkit.so)
$(B)/preload/libmpkit.so: $(LIB_SRC:%.c=$(B)/preload/%.o) src/libmpkit.map
	$(call link_lib,$(PRELOAD_LDFLAGS),$(filter %.o,$^))
# Its backtraces' names and symbol sizes come from copies of its own of
# src/shared/ code (the library's unwind.c is hidden).
HELPER_OBJ := $(B)/preload/tools/watch_preload.o $(B)/preload/tools/watch_spec.o $(B)/preload/src/shared/unwind.o \
	      $(B)/preload/src/shared/dynsym.o $(B)/preload/src/shared/elfsym.o
$(B)/preload/tools/%.o: MPK_XCFLAGS += -Isrc/shared
HELPER_LINK = -shared -Wl,--version-script=tools/watch_preload.map -Wl,-z,defs -Wl,-z,now \
	$(PRELOAD_LDFLAGS) $(HELPER_OBJ) $(HELPER_LIB)
$(B)/libmpkit-watch.so: $(HELPER_OBJ) $(HELPER_LIB) tools/watch_preload.map
	$(CC) $(HELPER_LINK) -Wl,-rpath,$(abspath $(dir $(HELPER_LIB))) -o $@

# The drop-in allocator (src/malloc/): its own objects, linked to
# libmpkit.so like the watch helper, so that a process has one mpkit even
# when the program links it too (one registry, one fault handler, one
# scan that knows mpkit's own WRPKRU sites); it exports only the C
# library's allocation calls.  It goes into programs built without
# sanitizers, so it is built without them.
# Its reports' backtraces come from copies of its own of src/shared/ code
# (the static object has the library's).
MALLOC_SRC := src/malloc/malloc.c src/malloc/boot.c src/malloc/debug.c
MALLOC_DROPIN_OBJ := $(MALLOC_SRC:%.c=$(B)/preload/%.o)
MALLOC_SHARED_OBJ := $(B)/preload/src/shared/trace.o $(B)/preload/src/shared/unwind.o
MALLOC_LINK = -shared -Wl,--version-script=src/malloc/malloc.map -Wl,-z,defs -Wl,-z,now \
	$(PRELOAD_LDFLAGS) $(MALLOC_DROPIN_OBJ) $(MALLOC_SHARED_OBJ) $(HELPER_LIB)
$(B)/libmpkit-malloc.so: $(MALLOC_DROPIN_OBJ) $(MALLOC_SHARED_OBJ) $(HELPER_LIB) src/malloc/malloc.map
	$(CC) $(MALLOC_LINK) -Wl,-rpath,$(abspath $(dir $(HELPER_LIB))) -o $@
# For a static program (the VM's stress test), one object with the
# library's objects in it, linked with -r so that --wrap applies to
# mpkit's objects alone: their malloc() calls go to the internal
# allocator (src/malloc/boot.c), never to the heap they are inside.
MALLOC_LIB_OBJ := $(if $(SANITIZE),$(LIB_SRC:%.c=$(B)/preload/%.o),$(PIC_OBJ))
MALLOC_WRAP_LD := --wrap=malloc --wrap=calloc --wrap=realloc --wrap=free
$(B)/libmpkit-malloc.o: $(MALLOC_DROPIN_OBJ) $(B)/preload/src/malloc/wrap.o $(MALLOC_LIB_OBJ)
	$(LD) -r $(MALLOC_WRAP_LD) $^ -o $@

# The JIT example (examples/jit/): its own directory, several files.
JIT_SRC := $(wildcard examples/jit/*.c)
$(B)/examples/jit: $(JIT_SRC:%.c=$(B)/obj/%.o) $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -rdynamic $^ -o $@

# JIT patching and watchpoints against mprotect (`make bench-code`).
$(B)/mpkit-bench-code: $(B)/obj/bench/code.o $(B)/obj/bench/options.o $(B)/libmpkit.a
	$(CC) $(ALL_LDFLAGS) $^ -pthread -o $@

# Files the tests run (copied next to them, so the VM image has them too):
# the JIT example, `mpkit watch`'s helper with a program to watch, the
# scan's lockdown test linked statically (glibc's static start-up code
# carries ld.so's trampolines too; no sanitizer links statically), and
# the shared library for `mpkit scan` to read.
TEST_FILES := $(B)/tests/ex-jit $(B)/tests/libmpkit-watch.so $(B)/tests/watch-target \
	      $(B)/tests/watch-plain $(B)/tests/watch-plain-stripped \
	      $(B)/tests/libmpkit-malloc.so $(B)/tests/malloc-edge $(B)/tests/malloc-stress $(B)/tests/malloc-misuse $(B)/tests/malloc-args \
	      $(B)/tests/malloc-misuse-static \
	      $(B)/tests/malloc-calloc \
	      $(B)/tests/malloc-stress-static $(B)/tests/bench-noise.so \
	      $(B)/tests/t_scan_lockdown_static $(B)/tests/scan-libmpkit.so $(B)/tests/scan-cc/built
$(B)/tests/ex-jit: $(B)/examples/jit
	@mkdir -p $(@D)
	cp $< $@
$(B)/tests/libmpkit-watch.so: $(B)/libmpkit-watch.so
	@mkdir -p $(@D)
	cp $< $@
$(B)/tests/libmpkit-malloc.so: $(B)/libmpkit-malloc.so
	@mkdir -p $(@D)
	cp $< $@
# The drop-in's tests run these with it preloaded (no sanitizer there).
$(B)/tests/malloc-%: tests/helpers/malloc_%.c
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_CFLAGS) $< -ldl -o $@
# Its frames' lines are what t_run_report checks: -g whatever CFLAGS say.
$(B)/tests/malloc-misuse: tests/helpers/malloc_misuse.c
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_CFLAGS) -g $< -o $@
# A static program with the C library's malloc, which mpkit run refuses.
$(B)/tests/malloc-misuse-static: tests/helpers/malloc_misuse.c
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_CFLAGS) -static $< -o $@
# t_cli_bench_malloc's stand-in for the drop-in: it prints a line more.
$(B)/tests/bench-noise.so: tests/helpers/bench_noise.c
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_CFLAGS) -shared -fPIC $< -o $@
$(B)/tests/malloc-stress-static: tests/helpers/malloc_stress.c $(B)/libmpkit-malloc.o
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_CFLAGS) -static $^ -o $@
$(B)/tests/watch-target: tests/helpers/watch_target.c
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_CFLAGS) -rdynamic $< -o $@
# Without -rdynamic: its globals are in .symtab only (and nowhere once
# stripped: -s).  -z now: no lazy binding, whose stores to the end of
# .got.plt (in the watched page) would open it to every thread on soft
# for an instruction while the test's other thread reads into it.
$(B)/tests/watch-plain: tests/helpers/watch_plain.c
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_CFLAGS) -g $< -pthread -Wl,-z,now -o $@
$(B)/tests/watch-plain-stripped: tests/helpers/watch_plain.c
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_CFLAGS) -s $< -pthread -Wl,-z,now -o $@
$(B)/preload/tests/%.o: MPK_XCFLAGS += -Itests
$(B)/preload/tests/t_scan_lockdown.o: MPK_XCFLAGS += -Isrc/shared
$(B)/preload/tests/libt.a: $(KIT_SRC:%.c=$(B)/preload/%.o)
	@rm -f $@
	$(AR) rcs $@ $^
$(B)/tests/t_scan_lockdown_static: $(B)/preload/tests/t_scan_lockdown.o $(B)/preload/tests/libt.a \
				   $(LIB_SRC:%.c=$(B)/preload/%.o)
	@mkdir -p $(@D)
	$(CC) -static -pthread $^ -o $@
$(B)/tests/scan-libmpkit.so: $(B)/libmpkit.so
	@mkdir -p $(@D)
	cp $< $@
# t_scan_compiled's cases: PKRU set to 0 as gcc and clang (when installed)
# write it, at -O0 and -O2 (tests/helpers/scan_case.c).
$(B)/tests/scan-cc/built: tests/helpers/scan_case.c
	@rm -rf $(@D) && mkdir -p $(@D)
	@for cc in gcc clang; do command -v $$cc >/dev/null 2>&1 || continue; \
	  for o in O0 O2; do \
	    for c in wrpkru builtin volatile; do \
	      $$cc -$$o -mpku -shared -fPIC -DCASE_$$(echo $$c | tr a-z A-Z) $< -o $(@D)/$$c-$$cc-$$o.so || exit 1; \
	    done; \
	    $$cc -$$o -static -DCASE_PKEY_SET $< -o $(@D)/pkeyset-$$cc-$$o || exit 1; \
	  done; done
	@touch $@

# The CLI tests run mpkit-bench and mpkit-bench-scale (the VM packs the
# latter); building every benchmark here keeps them all compiling.
tests: $(TEST_BIN) $(TEST_FILES) $(B)/tests/t_installed $(B)/tests/t_installed_cmds $(B)/tests/t_installed_live $(EX_TEST_BIN) $(BENCH_BIN)

# ---- the use-case examples (docs/examples.md) ----
# Each is built under $(B)/examples/NAME/ and copied to $(B)/tests/ex/,
# where its test (tests/t_ex_NAME.c) runs it and the VM harness packs it.

$(B)/obj/examples/keyd/%.o $(B)/obj/tests/t_ex_keyd.o: MPK_XCFLAGS += $(SODIUM_CFLAGS)
$(B)/examples/keyd/%: $(B)/obj/examples/keyd/%.o $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -rdynamic $^ $(SODIUM_LIBS) -o $@
ifeq ($(SODIUM_OK),yes)
$(B)/tests/t_ex_keyd: $(B)/obj/tests/t_ex_keyd.o $(KIT_LIB) $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(SODIUM_LIBS) -o $@
else
$(B)/tests/t_ex_keyd: FORCE
	$(call skip_test,libsodium,libsodium-dev)
endif

$(B)/tests/ex/%: $(B)/examples/keyd/%
	@mkdir -p $(@D)
	cp $< $@

# SQLite (libsqlite3-dev): its allocator in an mpk_heap.
SQLG_OBJ := $(B)/obj/examples/sqlite-guard/guard.o $(B)/obj/examples/sqlite-guard/workload.o
$(B)/obj/examples/sqlite-guard/%.o $(B)/obj/bench/sqlite_guard.o: MPK_XCFLAGS += $(SQLITE_CFLAGS) -Iexamples/sqlite-guard
$(B)/examples/sqlite-guard/sqlite-guard: $(B)/obj/examples/sqlite-guard/main.o $(SQLG_OBJ) $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -rdynamic $^ $(SQLITE_LIBS) -o $@
$(B)/tests/ex/sqlite-guard: $(B)/examples/sqlite-guard/sqlite-guard
	@mkdir -p $(@D)
	cp $< $@
ifneq ($(SQLITE_OK),yes)
$(B)/tests/t_ex_sqlite_guard: FORCE
	$(call skip_test,SQLite,libsqlite3-dev)
endif

# A store in a file mapped into a domain (mpk_map_file()).
$(B)/examples/pstore/pstore: $(B)/obj/examples/pstore/main.o $(B)/obj/examples/pstore/store.o $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -rdynamic $^ -o $@
$(B)/tests/ex/pstore: $(B)/examples/pstore/pstore
	@mkdir -p $(@D)
	cp $< $@
# Its throughput with and without the guard (`make bench-sqlite`).
$(B)/mpkit-bench-sqlite: $(B)/obj/bench/sqlite_guard.o $(B)/obj/bench/options.o $(SQLG_OBJ) $(B)/libmpkit.a
	$(CC) $(ALL_LDFLAGS) $^ $(SQLITE_LIBS) -o $@

# ---- install, and a test program built against the installed copy ----

# Man pages: real pages and one-line `.so` links.  They name the docs, the
# helpers and the command by their Debian paths (/usr/share/doc/mpkit/,
# /usr/libexec/mpkit/, ../libexec/mpkit from /usr/bin), which install turns
# into this install's: $(DOCDIR), $(HELPER_DIR), from $(BINDIR) (a '-' in
# them written \- as roff wants it).
man_esc = $(subst -,\\-,$(1))
MAN_PATHS = -e 's|/usr/share/doc/mpkit/|$(call man_esc,$(DOCDIR))/|g' \
	-e 's|/usr/libexec/mpkit/|$(call man_esc,$(HELPER_DIR))/|g' \
	-e 's|\.\./libexec/mpkit|$(call man_esc,$(call relpath,$(BINDIR),$(HELPER_DIR)))|g' \
	-e 's|^\.IR /usr/bin )|.IR $(call man_esc,$(BINDIR)) )|'
MAN1 := $(wildcard man/man1/*.1)
MAN3 := $(wildcard man/man3/*.3)
MAN7 := $(wildcard man/man7/*.7)
# The docs (docs/*.md, the figures they show), as they are in docs/.
DOCS := $(wildcard docs/*.md docs/*/*.svg)

# pkg-config and CMake files name their directories relative to ${prefix}
# (pkg-config) or to their own place (CMake) wherever they are under PREFIX,
# so an installed tree can move (and pkg-config --define-prefix works).
# Both name the helpers' directory too (helperdir, mpkit_HELPER_DIR: where
# libmpkit-malloc.so is, for an LD_PRELOAD in a service's unit file).
pc_rel   = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
GEN := $(B)/gen
# From CMAKEDIR up to PREFIX: one ".." per directory below PREFIX.
empty :=
space := $(empty) $(empty)
CMAKE_UP := $(subst $(space),/,$(patsubst %,..,$(subst /, ,$(patsubst $(PREFIX)/%,%,$(CMAKEDIR)))))
cm_rel   = $(if $(filter $(PREFIX)/%,$(1)),$${_mpkit_prefix}/$(patsubst $(PREFIX)/%,%,$(1)),$(1))

gen-install-files: mpkit.pc.in cmake/mpkitConfig.cmake.in cmake/mpkitConfigVersion.cmake.in include/mpkit.h
	@mkdir -p $(GEN)
	@sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(call pc_rel,$(LIBDIR))|' \
	    -e 's|@INCDIR@|$(call pc_rel,$(INCDIR))|' -e 's|@HELPERDIR@|$(call pc_rel,$(HELPER_DIR))|' \
	    -e 's|@VERSION@|$(VERSION)|' mpkit.pc.in > $(GEN)/mpkit.pc
	@sed -e 's|@PREFIX_FROM_HERE@|$(if $(filter $(PREFIX)/%,$(CMAKEDIR)),$${CMAKE_CURRENT_LIST_DIR}/$(CMAKE_UP),$(PREFIX))|' \
	    -e 's|@LIBDIR@|$(call cm_rel,$(LIBDIR))|' -e 's|@INCDIR@|$(call cm_rel,$(INCDIR))|' \
	    -e 's|@HELPERDIR@|$(call cm_rel,$(HELPER_DIR))|' \
	    -e 's|@SONAME@|$(SONAME)|' -e 's|@VERSION@|$(VERSION)|' cmake/mpkitConfig.cmake.in > $(GEN)/mpkitConfig.cmake
	@sed -e 's|@VERSION@|$(VERSION)|' cmake/mpkitConfigVersion.cmake.in > $(GEN)/mpkitConfigVersion.cmake

# The programs as installed.  install links mpkit, the watch helper and
# the benchmarks that link libmpkit.so again, into $(INST), each with the
# RUNPATH of its installed place: relative to it ($$ORIGIN), so that an
# installed or DESTDIR-staged tree works where it is and can move; none
# where $(LIBDIR) is a directory the dynamic linker searches anyway
# (Debian's /usr/lib/<triplet>: policy and lintian want none there).  The
# installed mpkit finds its helpers at the same relative place
# (tools/paths.c).  $(INST)/layout holds the directories they were linked
# for, rewritten when they change.
INST := $(B)/inst
HELPER_DIR = $(LIBEXECDIR)/mpkit
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
SYSTEM_LIBDIRS := /lib /usr/lib /lib64 /usr/lib64 $(if $(MULTIARCH),/lib/$(MULTIARCH) /usr/lib/$(MULTIARCH))
relpath = $(shell realpath -m --relative-to='$(1)' '$(2)')
inst_rpath = $(if $(filter $(SYSTEM_LIBDIRS),$(patsubst %/,%,$(LIBDIR))),,-Wl,-rpath,'$$ORIGIN/$(call relpath,$(1),$(LIBDIR))')
INST_LAYOUT := $(BINDIR) $(LIBDIR) $(LIBEXECDIR) $(DOCDIR) $(MULTIARCH)
$(shell mkdir -p $(INST) && [ "$$(cat $(INST)/layout 2>/dev/null)" = '$(INST_LAYOUT)' ] || echo '$(INST_LAYOUT)' > $(INST)/layout)
# $(call relink,OBJECTS,LIBS,DIR): $@ linked to libmpkit.so for DIR.
relink = $(CC) $(ALL_LDFLAGS) $(1) $(B)/libmpkit.so $(call inst_rpath,$(3)) $(2) -o $@

$(INST)/paths.o: tools/paths.c $(INST)/layout
	$(CC) $(ALL_CFLAGS) -DMPKIT_LIBEXEC='"$(call relpath,$(BINDIR),$(HELPER_DIR))"' -DMPKIT_DOCDIR='"$(DOCDIR)"' -c $< -o $@
$(INST)/mpkit: $(CLI_OBJ) $(INST)/paths.o $(B)/libmpkit.so
	$(call relink,$(CLI_OBJ) $(INST)/paths.o,,$(BINDIR))
$(INST)/mpkit-bench: $(B)/mpkit-bench $(INST)/layout
	$(call relink,$(BENCH_MAIN_OBJ),$(BENCH_MAIN_LIBS),$(HELPER_DIR))
$(INST)/mpkit-bench-alloc: $(B)/mpkit-bench-alloc $(INST)/layout
	$(call relink,$(BENCH_ALLOC_OBJ),$(BENCH_ALLOC_LIBS),$(HELPER_DIR))
$(INST)/mpkit-bench-vault: $(B)/mpkit-bench-vault $(INST)/layout
	$(call relink,$(BENCH_VAULT_OBJ),$(BENCH_VAULT_ALL_LIBS),$(HELPER_DIR))
$(INST)/mpkit-bench-threads: $(B)/mpkit-bench-threads $(INST)/layout
	$(call relink,$(BENCH_THREADS_OBJ),$(BENCH_THREADS_LIBS),$(HELPER_DIR))
$(INST)/libmpkit-watch.so: $(B)/libmpkit-watch.so $(INST)/layout
	$(CC) $(HELPER_LINK) $(call inst_rpath,$(HELPER_DIR)) -o $@
$(INST)/libmpkit-malloc.so: $(B)/libmpkit-malloc.so $(INST)/layout
	$(CC) $(MALLOC_LINK) $(call inst_rpath,$(HELPER_DIR)) -o $@
# What goes into $(HELPER_DIR): mpkit-bench-scale and mpkit-bench-malloc
# are linked statically.
HELPERS := $(addprefix $(INST)/,mpkit-bench mpkit-bench-alloc mpkit-bench-vault mpkit-bench-threads) $(B)/mpkit-bench-scale \
	   $(B)/mpkit-bench-malloc

# Each installed file, as a path under DESTDIR, for install and uninstall.
INST_FILES = $(INCDIR)/mpkit.h $(LIBDIR)/libmpkit.a $(LIBDIR)/libmpkit.so.$(VERSION) \
	$(LIBDIR)/$(SONAME) $(LIBDIR)/libmpkit.so $(PCDIR)/mpkit.pc \
	$(CMAKEDIR)/mpkitConfig.cmake $(CMAKEDIR)/mpkitConfigVersion.cmake \
	$(BINDIR)/mpkit $(addprefix $(HELPER_DIR)/,$(notdir $(HELPERS)) libmpkit-watch.so libmpkit-malloc.so) \
	$(patsubst man/%,$(MANDIR)/%,$(MAN1) $(MAN3) $(MAN7)) $(patsubst docs/%,$(DOCDIR)/%,$(DOCS))
INST_DIRS = $(CMAKEDIR) $(HELPER_DIR) $(sort $(patsubst %/,%,$(dir $(patsubst docs/%,$(DOCDIR)/%,$(DOCS))))) $(DOCDIR)

install: $(ALL_BIN) $(INST)/mpkit $(INST)/libmpkit-watch.so $(INST)/libmpkit-malloc.so $(HELPERS) gen-install-files
	install -d $(DESTDIR)$(INCDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PCDIR) $(DESTDIR)$(BINDIR) \
		$(DESTDIR)$(CMAKEDIR) $(DESTDIR)$(HELPER_DIR)
	install -m 644 include/mpkit.h $(DESTDIR)$(INCDIR)/
	install -m 644 $(B)/libmpkit.a $(DESTDIR)$(LIBDIR)/
	install -m 644 $(B)/libmpkit.so $(DESTDIR)$(LIBDIR)/libmpkit.so.$(VERSION)
	ln -sf libmpkit.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libmpkit.so
	install -m 644 $(INST)/libmpkit-watch.so $(INST)/libmpkit-malloc.so $(DESTDIR)$(HELPER_DIR)/
	install -m 644 $(GEN)/mpkit.pc $(DESTDIR)$(PCDIR)/
	install -m 644 $(GEN)/mpkitConfig.cmake $(GEN)/mpkitConfigVersion.cmake $(DESTDIR)$(CMAKEDIR)/
	install -m 755 $(INST)/mpkit $(DESTDIR)$(BINDIR)/
	install -m 755 $(HELPERS) $(DESTDIR)$(HELPER_DIR)/
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man7
	@for f in $(MAN1) $(MAN3) $(MAN7); do \
		d=$(DESTDIR)$(MANDIR)/$${f#man/}; echo "install $$f $$d"; \
		sed $(MAN_PATHS) $$f > $$d && chmod 644 $$d || exit 1; \
	done
	@for f in $(DOCS); do \
		d=$(DESTDIR)$(DOCDIR)/$${f#docs/}; echo "install $$f $$d"; \
		install -D -m 644 $$f $$d || exit 1; \
	done
	$(if $(DESTDIR),,@tools/ldconfig.sh install $(LIBDIR) $(SONAME))

# Removes what install put there, and the directories only mpkit uses.
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INST_FILES))
	-rmdir $(addprefix $(DESTDIR),$(INST_DIRS)) 2>/dev/null
	$(if $(DESTDIR),,@tools/ldconfig.sh uninstall $(LIBDIR) $(SONAME))

# A staged install (DESTDIR) for the tests of the installed copy:
# t_installed builds against it, t_installed_cmds runs every installed
# command from where it is.  Every directory is given, so that a caller's
# (debian/rules passes LIBDIR) cannot send files out of the stage.  Its
# prerequisites are install's, so the sub-make only links $(INST)'s.  The
# staged programs are stripped, as packages install them (not in a
# sanitizer build, whose programs the sanitizers need whole).
STAGE := $(abspath $(B)/stage)
STAGE_PREFIX := /usr/local
SP := $(STAGE)$(STAGE_PREFIX)
inst_dirs = $(foreach d,LIBDIR=lib INCDIR=include BINDIR=bin LIBEXECDIR=libexec CMAKEDIR=lib/cmake/mpkit \
	PCDIR=lib/pkgconfig MANDIR=share/man DOCDIR=share/doc/mpkit,$(subst =,=$(1)/,$(d)))
STAGE_DIRS := $(call inst_dirs,$(STAGE_PREFIX))
$(B)/stage.done: $(ALL_BIN) $(HELPERS) $(CLI_OBJ) $(BENCH_MAIN_OBJ) $(BENCH_ALLOC_OBJ) $(BENCH_THREADS_OBJ) \
		$(MAN1) $(MAN3) $(MAN7) $(DOCS) include/mpkit.h tools/paths.c
	rm -rf $(STAGE)
	$(MAKE) --no-print-directory install DESTDIR=$(STAGE) PREFIX=$(STAGE_PREFIX) $(STAGE_DIRS) SANITIZE=$(SANITIZE)
	$(if $(SANITIZE),,strip --strip-unneeded $(SP)/bin/mpkit $(SP)/lib/libmpkit.so.$(VERSION) $(SP)/libexec/mpkit/*)
	touch $@
STAGE_PC = $$(PKG_CONFIG_PATH=$(SP)/lib/pkgconfig pkg-config --define-prefix --cflags --libs mpkit) -Wl,-rpath,$(SP)/lib
$(B)/tests/t_installed: tests/installed/t_installed.c $(B)/stage.done
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $< -o $@ $(STAGE_PC) $(ALL_LDFLAGS)
$(B)/tests/t_installed_cmds: tests/installed/cmds.c tests/t.h tests/t_exec.h $(KIT_LIB) $(B)/stage.done
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests -DSTAGE='"$(SP)"' -rdynamic $< $(KIT_LIB) -o $@ $(STAGE_PC) $(ALL_LDFLAGS)

# A live install (no DESTDIR) into a throwaway PREFIX, with a stand-in
# ldconfig first on PATH (tests/installed/fake-ldconfig: it logs how it
# was run and lists the directories FAKE_LDCONFIG_DIRS names): once where
# PREFIX/lib is one of them, uninstalled, then once where it is not.
# t_installed_live reads what each did, and the installed man pages,
# pkg-config file and mpkit --help.  Its own INST and GEN: the stage's
# programs, linked for the stage's layout, are not linked again for this
# one (and back).  A '-' in PREFIX, for the man pages' \-.
LIVE := $(abspath $(B)/live)
LIVE_PREFIX := $(LIVE)/my-prefix
# $(call live_install,TARGET,NAME,DIRS): $(LIVE)/NAME.out and NAME.ldconfig.
live_install = PATH=$(LIVE)/bin:$$PATH FAKE_LDCONFIG_LOG=$(LIVE)/$(2).ldconfig FAKE_LDCONFIG_DIRS='$(3)' \
	$(MAKE) --no-print-directory $(1) DESTDIR= PREFIX=$(LIVE_PREFIX) $(call inst_dirs,$(LIVE_PREFIX)) \
		INST=$(B)/inst-live GEN=$(B)/gen-live SANITIZE=$(SANITIZE) >$(LIVE)/$(2).out 2>&1 || \
	{ cat $(LIVE)/$(2).out; exit 1; }
$(B)/live.done: $(B)/stage.done tools/ldconfig.sh tests/installed/fake-ldconfig mpkit.pc.in cmake/mpkitConfig.cmake.in
	rm -rf $(LIVE) && mkdir -p $(LIVE)/bin && cp tests/installed/fake-ldconfig $(LIVE)/bin/ldconfig
	$(call live_install,install,seen,/usr/lib $(LIVE_PREFIX)/lib)
	$(call live_install,uninstall,uninstall,/usr/lib $(LIVE_PREFIX)/lib)
	$(call live_install,install,unseen,/usr/lib)
	touch $@
$(B)/tests/t_installed_live: tests/installed/live.c tests/t.h tests/t_exec.h $(KIT_LIB) $(B)/libmpkit.a $(B)/live.done
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests -DLIVE='"$(LIVE)"' -DLIVE_PREFIX='"$(LIVE_PREFIX)"' $< $(KIT_LIB) $(B)/libmpkit.a \
		-o $@ $(ALL_LDFLAGS)

# find_package(mpkit) from a CMake project, against the staged install that
# t_installed made: shared and static targets, both run.
check-cmake: $(B)/tests/t_installed
	@command -v cmake >/dev/null || { echo "check-cmake: cmake not found (apt-get install cmake)"; exit 1; }
	rm -rf $(B)/cmake
	cmake -S tests/cmake -B $(B)/cmake -DCMAKE_PREFIX_PATH=$(SP) -DCMAKE_BUILD_RPATH=$(SP)/lib >$(B)/cmake.log
	cmake --build $(B)/cmake >>$(B)/cmake.log
	$(B)/cmake/user_shared && $(B)/cmake/user_static
	ldd $(B)/cmake/user_shared | grep -q '$(SP)/lib/$(SONAME)'
	@echo "cmake: find_package(mpkit) builds and runs (shared and static)"

# Debian packages from the tarball, lintian, and programs built against
# them (tests/deb/check-deb.sh; MPKIT_DEB_INSTALL=system installs them).
check-deb:
	tests/deb/check-deb.sh $(B)

# The ABI against the last release (tests/check-abi.sh, abigail-tools);
# make abi-baseline stores this version's as the next baseline (at a tag).
abi-check: $(B)/libmpkit.so
	@tests/check-abi.sh $(B)/libmpkit.so
abi-baseline: $(B)/libmpkit.so
	@tests/check-abi.sh $(B)/libmpkit.so --store

# README's example programs, cut out of README.md as printed (the block
# after <!-- example: NAME -->), compiled with every warning as an error,
# and run.  The first program must work, and fail cleanly (exit 1, a
# message, no crash) when mpkit cannot start; the first screen's short one
# must be stopped by its stray read, reported.
readme_cut = awk -v m='<!-- example: $(1) -->' '$$0 == m { f = 1; next } f && /^```c/ { on = 1; next } \
		on && /^```/ { exit } on { print }' README.md > $(B)/readme/$(1) && test -s $(B)/readme/$(1) || \
	{ echo "readme: FAIL, no example $(1) marked in README.md"; exit 1; }
readme_cc = $(CC) $(ALL_CFLAGS) -Werror $(B)/readme/$(1).c -o $(B)/readme/$(1) $(B)/libmpkit.a $(ALL_LDFLAGS)
check-readme: $(B)/libmpkit.a
	@mkdir -p $(B)/readme
	@$(call readme_cut,readme.c)
	$(call readme_cc,readme)
	$(B)/readme/readme
	@MPKIT_BACKEND=bogus $(B)/readme/readme 2>$(B)/readme/bogus.err; rc=$$?; \
	if [ $$rc != 1 ] || ! grep -q 'MPKIT_BACKEND="bogus"' $(B)/readme/bogus.err; then \
		echo "readme: FAIL, with MPKIT_BACKEND=bogus the example exits $$rc:"; cat $(B)/readme/bogus.err; exit 1; fi
	@$(call readme_cut,short.c)
	$(call readme_cc,short)
	@$(B)/readme/short 2>$(B)/readme/short.err; rc=$$?; \
	if [ $$rc -lt 128 ] || ! grep -q 'read of domain "keys"' $(B)/readme/short.err; then \
		echo "readme: FAIL, the short example exits $$rc, its stray read not reported:"; \
		cat $(B)/readme/short.err; exit 1; fi
	@echo "readme: both examples compile as printed; the first runs and fails cleanly on a bad environment, the short one's stray read is reported"

# ---- release tarball ----

DIST := mpkit-$(VERSION)
# One time stamp for every file: SOURCE_DATE_EPOCH, else the last commit's.
DIST_TIME = $(or $(SOURCE_DATE_EPOCH),$(shell git log -1 --format=%ct 2>/dev/null),$(shell date +%s))
# What a release contains: the files git knows (tracked, or new and not
# ignored) or, in an unpacked tarball, what is there but build output.
dist:
	@rm -f $(DIST).tar.gz
	@mkdir -p $(B)
	@if [ "$$(git rev-parse --show-toplevel 2>/dev/null)" = "$$(pwd -P)" ]; then \
		git ls-files -co --exclude-standard | while IFS= read -r f; do [ -e "$$f" ] && echo "$$f"; done; \
	else \
		find . \( -path './build*' -o -name '*.tar.gz' \) -prune -o \( -type f -o -type l \) -print | sed 's|^\./||'; \
	fi | LC_ALL=C sort > $(B)/dist.files
	tar --transform 's|^|$(DIST)/|' --owner=0 --group=0 --numeric-owner --mtime=@$(DIST_TIME) \
		-cf - -T $(B)/dist.files | gzip -9n > $(DIST).tar.gz
	@echo "dist: $(DIST).tar.gz, $$(wc -l < $(B)/dist.files) files"

# The tarball builds by itself, with a user's hardening flags added, passes
# its checks, installs (into a DESTDIR), uninstalls leaving nothing behind,
# and makes the same tarball again.  DISTCHECK_TARGET=check also runs the VM
# suite (CI does: the kernel comes from MPKIT_VM_KERNEL or apt, as for
# make check); the default is the native suite, which needs nothing.
DISTCHECK_TARGET ?= check-native
DISTCHECK_CFLAGS ?= -O2 -g -fstack-protector-strong -D_FORTIFY_SOURCE=2
DISTCHECK_LDFLAGS ?= -Wl,-z,relro
DC := $(abspath $(B)/distcheck)
distcheck: dist
	rm -rf $(DC) && mkdir -p $(DC)
	tar -C $(DC) -xzf $(DIST).tar.gz
	cd $(DC)/$(DIST) && $(MAKE) --no-print-directory -j2 CFLAGS="$(DISTCHECK_CFLAGS)" \
		LDFLAGS="$(DISTCHECK_LDFLAGS)" BUILD=build SANITIZE= $(DISTCHECK_TARGET)
	cd $(DC)/$(DIST) && $(MAKE) --no-print-directory CFLAGS="$(DISTCHECK_CFLAGS)" \
		LDFLAGS="$(DISTCHECK_LDFLAGS)" BUILD=build SANITIZE= check-cmake
	cd $(DC)/$(DIST) && $(MAKE) --no-print-directory BUILD=build SANITIZE= \
		install DESTDIR=$(DC)/inst PREFIX=/usr >/dev/null
	test -x $(DC)/inst/usr/libexec/mpkit/mpkit-bench && LD_LIBRARY_PATH=$(DC)/inst/usr/lib $(DC)/inst/usr/bin/mpkit --version
	cd $(DC)/$(DIST) && $(MAKE) --no-print-directory BUILD=build SANITIZE= \
		uninstall DESTDIR=$(DC)/inst PREFIX=/usr >/dev/null
	@left=$$(find $(DC)/inst \( -type f -o -type l \) -print); \
	if [ -n "$$left" ]; then echo "distcheck: FAIL, uninstall left:"; echo "$$left"; exit 1; fi
	cd $(DC)/$(DIST) && $(MAKE) --no-print-directory BUILD=build dist >/dev/null
	tar -tzf $(DC)/$(DIST)/$(DIST).tar.gz | sort > $(DC)/again.list
	tar -tzf $(DIST).tar.gz | sort | cmp -s - $(DC)/again.list || \
		{ echo "distcheck: FAIL, the unpacked tree makes another tarball"; exit 1; }
	@echo "distcheck: $(DIST).tar.gz builds, passes $(DISTCHECK_TARGET), installs and uninstalls cleanly"

# ---- running ----

demo: $(B)/examples/demo
	$(B)/examples/demo

# The use cases, each as its test tells it (the programs' output included).
example-keyd: $(B)/tests/t_ex_keyd $(EX_TEST_BIN)
	$(B)/tests/t_ex_keyd
example-sqlite-guard: $(B)/tests/t_ex_sqlite_guard $(EX_TEST_BIN)
	$(B)/tests/t_ex_sqlite_guard
example-pstore: $(B)/tests/t_ex_pstore $(EX_TEST_BIN)
	$(B)/tests/t_ex_pstore

# Not a test: builds every benchmark, then prints a table of timings (never
# compared against limits).
BENCH_OUT := $(B)/bench
# Without gnuplot (DEPS=no, or not Debian) the plot is left out, saying so.
bench: $(B)/mpkit benchmarks
	@mkdir -p $(BENCH_OUT)
	@command -v gnuplot >/dev/null || echo "bench: no gnuplot (Debian: gnuplot-nox): the plot is left out"
	$(B)/mpkit bench --csv $(BENCH_OUT)/results.csv --json $(BENCH_OUT)/results.json \
		$$(command -v gnuplot >/dev/null && echo --plot $(BENCH_OUT)/results.svg) $(BENCH_ARGS)

# Not a test: the scale table (lookups, faults, threads, save/restore).
bench-scale: $(B)/mpkit-bench-scale
	$(B)/mpkit-bench-scale

# Not a test either: heap and vault figures with ratios; BENCH_ALLOC_ARGS=--smoke.
bench-alloc: $(B)/mpkit-bench-alloc
	$(B)/mpkit-bench-alloc $(BENCH_ALLOC_ARGS)

# Not a test: peak RSS per workload with ratios to glibc.
bench-rss: $(B)/mpkit-bench-rss
	$(B)/mpkit-bench-rss

bench-vault: $(B)/mpkit-bench-vault
	$(B)/mpkit-bench-vault $(BENCH_VAULT_ARGS)

# Not a test: real programs under five allocators, ratios to glibc, the
# plot in build/bench/malloc.svg; BENCH_MALLOC_ARGS="--reps 3 --workloads git".
bench-malloc: $(B)/mpkit-bench-malloc $(B)/libmpkit-malloc.so
	@mkdir -p $(BENCH_OUT)
	$(B)/mpkit-bench-malloc --plot $(BENCH_OUT)/malloc.svg $(BENCH_MALLOC_ARGS)

# Not a test: JIT patch+run and watched writes against mprotect.
bench-code: $(B)/mpkit-bench-code
	$(B)/mpkit-bench-code $(BENCH_CODE_ARGS)
# SQLite's workload with its memory guarded and not, side by side.
bench-sqlite: $(B)/mpkit-bench-sqlite
	$(B)/mpkit-bench-sqlite $(BENCH_SQLITE_ARGS)

# The VM suite exits 77 when QEMU, busybox or the kernel cannot be had: a
# skip here, a failure with MPKIT_VM_REQUIRED=1 (CI).  The two suites'
# summary lines are repeated at the end, where they are easy to find.
check: all tests
	@tests/check-layers.sh $(B)
	@tests/check-layers-test.sh $(B)
	@tests/check-exports.sh $(B)/libmpkit.so
	@tests/check-man.sh $(B)/libmpkit.so
	@tests/check-header.sh "$(CC)"
	@rc=0; \
	{ tests/run-tests.sh native $(B)/tests; echo $$? > $(B)/native.rc; } | tee $(B)/native.log; \
	[ "$$(cat $(B)/native.rc)" = 0 ] || rc=1; \
	if [ -n "$(SANITIZE)" ]; then echo "vm: not run (sanitizer build: the VM suite runs in plain make check)" > $(B)/vm.log; \
	else { tests/vm/vm.sh $(B) $(B)/tests; echo $$? > $(B)/vm.rc; } | tee $(B)/vm.log; vrc=$$(cat $(B)/vm.rc); \
		if [ $$vrc = 77 ]; then [ -z "$$MPKIT_VM_REQUIRED" ] || rc=1; \
		elif [ $$vrc != 0 ]; then rc=1; fi; \
	fi; \
	echo; grep -E '^native: ' $(B)/native.log | tail -n 1; grep -E '^vm: ' $(B)/vm.log | tail -n 1; \
	exit $$rc

check-native: all tests
	@tests/check-layers.sh $(B)
	@tests/check-layers-test.sh $(B)
	@tests/check-exports.sh $(B)/libmpkit.so
	@tests/check-man.sh $(B)/libmpkit.so
	@tests/check-header.sh "$(CC)"
	@tests/run-tests.sh native $(B)/tests

# The native suite again, every test with the drop-in allocator preloaded:
# mpkit's own calls never reach the heap they are inside, whatever the
# program's malloc is (tests link libmpkit.a, so two mpkits share the
# process: the drop-in's libmpkit.so and the test's own).
check-malloc: all tests
	@if [ -n "$(SANITIZE)" ]; then echo "check-malloc: a sanitizer's runtime owns malloc; not run"; exit 1; fi
	@MPKIT_TEST_PRELOAD=$(abspath $(B))/libmpkit-malloc.so tests/run-tests.sh malloc $(B)/tests

check-vm: all tests
	@tests/vm/vm.sh $(B) $(B)/tests; vrc=$$?; \
	if [ $$vrc = 77 ] && [ -z "$$MPKIT_VM_REQUIRED" ]; then vrc=0; fi; exit $$vrc

clean:
	rm -rf build mpkit.pc mpkit-*.tar.gz

.PHONY: FORCE bench-vault all benchmarks tests install uninstall gen-install-files dist distcheck check-cmake check-deb abi-check abi-baseline check-readme \
	demo example-keyd example-sqlite-guard example-pstore bench bench-alloc bench-code bench-malloc bench-rss bench-sqlite bench-scale \
	check check-native check-malloc check-vm clean
.SECONDARY:

# (not in tests/minroot/run.sh's Debian root, a tree of its own)
-include $(shell find $(BUILD) -path '$(BUILD)/minroot' -prune -o -name '*.d' -print 2>/dev/null)
