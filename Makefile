# mpkit: one non-recursive Makefile.  `make` builds into build/.
#   make            library (static + shared) and the mpkit CLI
#   make demo       build and run examples/demo
#   make check      native test suite, then the same tests in a PKU VM
#   make bench      build and run the benchmark (table on stdout, CSV, JSON and
#                   SVG in build/bench/); BENCH_ARGS="--sizes 4K,2M" passes options
#   make bench-alloc  heaps against glibc malloc, vaults against libsodium
#   make install PREFIX=/usr/local   (also the man pages, into $(MANDIR))
# SANITIZE=address,undefined builds everything with those sanitizers into
# build/san/ (and `make check` then runs the native suite only).

PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib
INCDIR  ?= $(PREFIX)/include
BINDIR  ?= $(PREFIX)/bin
PCDIR   ?= $(LIBDIR)/pkgconfig
MANDIR  ?= $(PREFIX)/share/man
DESTDIR ?=

CC      ?= cc
VERSION := $(shell sed -n 's/^#define MPK_VERSION_STRING "\(.*\)"/\1/p' include/mpkit.h)
SONAME  := libmpkit.so.0

BUILD ?= build
B := $(BUILD)$(if $(SANITIZE),/san)

WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-missing-field-initializers
CFLAGS  ?= -O2 -g
CFLAGS  += -std=gnu11 $(WARN) -pthread -Iinclude
LDFLAGS += -pthread
ifneq ($(SANITIZE),)
CFLAGS  += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
endif
DEPFLAGS = -MMD -MP

ARCH := $(shell uname -m)
ifeq ($(ARCH),x86_64)
ARCH_SRC := src/arch/x86/cpu.c src/arch/x86/frames.c
else
ARCH_SRC := src/arch/none/cpu.c
endif

LIB_SRC := src/init.c src/os.c src/domain.c src/region.c src/memory.c \
           src/rights.c src/soft.c src/broadcast.c src/thread.c src/fork.c src/fault.c $(ARCH_SRC) \
           src/layer.c src/heap/meta.c src/heap/map.c src/heap/run.c src/heap/big.c \
           src/heap/heap.c src/heap/misuse.c src/heap/cache.c src/heap/fork.c src/heap/vault.c \
           src/scan.c src/lockdown.c src/lockdown_bpf.c src/landlock.c src/code.c src/watch.c src/window.c
LIB_OBJ := $(LIB_SRC:%.c=$(B)/obj/%.o)
PIC_OBJ := $(LIB_SRC:%.c=$(B)/pic/%.o)

TEST_SRC := $(sort $(wildcard tests/t_*.c))
TEST_BIN := $(TEST_SRC:tests/%.c=$(B)/tests/%)
EX_SRC   := $(wildcard examples/*.c)
EX_BIN   := $(EX_SRC:examples/%.c=$(B)/examples/%)

# The benchmark uses libsodium for its libsodium rows when pkg-config finds
# it; the library and the mpkit command never link it.
SODIUM_OK   := $(shell pkg-config --exists libsodium 2>/dev/null && echo yes)
ifeq ($(SODIUM_OK),yes)
BENCH_CPPFLAGS := -DMPKIT_BENCH_SODIUM $(shell pkg-config --cflags libsodium)
BENCH_LIBS     := $(shell pkg-config --libs libsodium)
endif
SODIUM_CFLAGS := $(shell pkg-config --cflags libsodium 2>/dev/null)
SODIUM_LIBS   := $(shell pkg-config --libs libsodium 2>/dev/null)

# The use-case examples (docs/examples.md) need libsodium and SQLite; the
# copies in $(B)/tests/ex/ are what their tests run (and the VM packs).
SQLITE_OK     := $(shell pkg-config --exists sqlite3 2>/dev/null && echo yes)
SQLITE_CFLAGS := $(shell pkg-config --cflags sqlite3 2>/dev/null)
SQLITE_LIBS   := $(shell pkg-config --libs sqlite3 2>/dev/null)
EX_TEST_BIN   := $(if $(SODIUM_OK),$(B)/tests/ex/keyd $(B)/tests/ex/attack) \
                 $(if $(SQLITE_OK),$(B)/tests/ex/sqlite-guard $(B)/mpkit-bench-sqlite) \
                 $(B)/tests/ex/pstore
BENCH_SRC := bench/engine.c bench/machine.c bench/report.c bench/plot.c
BENCH_OBJ := $(BENCH_SRC:%.c=$(B)/obj/%.o)

all: $(B)/libmpkit.a $(B)/libmpkit.so $(B)/mpkit $(B)/mpkit-bench $(B)/mpkit-bench-alloc $(B)/mpkit-bench-threads $(B)/mpkit-bench-scale $(B)/mpkit-bench-broadcast \
     $(B)/mpkit-bench-lockdown \
     $(B)/libmpkit-watch.so $(B)/mpkit-bench-code $(B)/examples/jit

$(B)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fvisibility=hidden $(DEPFLAGS) -c $< -o $@

$(B)/pic/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fPIC -fvisibility=hidden $(DEPFLAGS) -c $< -o $@

$(B)/libmpkit.a: $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

# Hidden visibility keeps internals out; the version script is the list.
$(B)/libmpkit.so: $(PIC_OBJ) src/libmpkit.map
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=src/libmpkit.map \
		-Wl,-z,defs -Wl,-z,now $(LDFLAGS) $(PIC_OBJ) -o $@
	ln -sf libmpkit.so $(B)/$(SONAME)

# The scan command uses the library's scanner (src/scan.h, internal).
$(B)/obj/tools/scan.o $(B)/obj/tests/t_scan_%.o: CFLAGS += -Isrc
$(B)/mpkit: $(B)/obj/tools/mpkit.o $(B)/obj/tools/scan.o $(B)/libmpkit.a
	$(CC) $(LDFLAGS) $^ -o $@

$(B)/obj/tools/%.o $(B)/obj/tests/%.o $(B)/obj/examples/%.o $(B)/obj/bench/%.o: CFLAGS += -Itests
$(B)/obj/bench/%.o $(B)/obj/tests/t_bench_smoke.o: CFLAGS += -Ibench $(BENCH_CPPFLAGS)

# `mpkit bench` runs this program, found next to the mpkit binary.
$(B)/mpkit-bench: $(B)/obj/bench/main.o $(BENCH_OBJ) $(B)/libmpkit.a
	$(CC) $(LDFLAGS) $^ $(BENCH_LIBS) -lm -o $@

# Heaps and vaults against glibc malloc and libsodium (`make bench-alloc`).
$(B)/mpkit-bench-alloc: $(B)/obj/bench/alloc.o $(B)/libmpkit.a
	$(CC) $(LDFLAGS) $^ $(BENCH_LIBS) -o $@

# Rights changes for one thread and for all (mpk_set_all) against mprotect.
$(B)/mpkit-bench-threads: $(B)/obj/bench/threads.o $(B)/libmpkit.a
	$(CC) $(LDFLAGS) $^ -pthread -o $@

# What mpk_lockdown() costs: its own time, and the MPK_WITH loop before/after.
$(B)/mpkit-bench-lockdown: $(B)/obj/bench/lockdown.o $(BENCH_OBJ) $(B)/libmpkit.a
	$(CC) $(LDFLAGS) $^ $(BENCH_LIBS) -lm -o $@

# Lookups, faults, no-change sets, save/restore at scale (`make bench-scale`).
$(B)/mpkit-bench-scale: $(B)/obj/bench/scale.o $(BENCH_OBJ) $(B)/libmpkit.a
	$(CC) $(LDFLAGS) $^ $(BENCH_LIBS) -lm -pthread -o $@

# One broadcast with 1..16 threads: time, signals and system calls.
$(B)/mpkit-bench-broadcast: $(B)/obj/bench/broadcast.o $(B)/libmpkit.a
	$(CC) $(LDFLAGS) $^ -pthread -o $@

# The VM smoke test of the benchmark engine: tiny sizes, both backends.
$(B)/tests/t_bench_smoke: $(B)/obj/tests/t_bench_smoke.o $(BENCH_OBJ) $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ $(BENCH_LIBS) -lm -o $@

$(B)/tests/%: $(B)/obj/tests/%.o $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@

# -rdynamic: fault-report backtraces name the example's functions.
$(B)/examples/%: $(B)/obj/examples/%.o $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -rdynamic $^ -o $@

# `mpkit watch`'s LD_PRELOAD helper: the library's objects and the helper,
# built without sanitizers (it goes into programs built without them).
PRELOAD_CFLAGS := $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(CFLAGS))
PRELOAD_OBJ := $(LIB_SRC:%.c=$(B)/preload/%.o) $(B)/preload/tools/watch_preload.o
$(B)/preload/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_CFLAGS) -fPIC -fvisibility=hidden $(DEPFLAGS) -c $< -o $@
$(B)/libmpkit-watch.so: $(PRELOAD_OBJ) tools/watch_preload.map
	$(CC) -shared -pthread -Wl,--version-script=tools/watch_preload.map -Wl,-z,defs $(PRELOAD_OBJ) -o $@

# The JIT example (examples/jit/): its own directory, several files.
JIT_SRC := $(wildcard examples/jit/*.c)
$(B)/examples/jit: $(JIT_SRC:%.c=$(B)/obj/%.o) $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -rdynamic $^ -o $@

# JIT patching and watchpoints against mprotect (`make bench-code`).
$(B)/mpkit-bench-code: $(B)/obj/bench/code.o $(B)/libmpkit.a
	$(CC) $(LDFLAGS) $^ -pthread -o $@

# Files the tests run (copied next to them, so the VM image has them too):
# the JIT example, and `mpkit watch`'s helper with a program to watch.
TEST_FILES := $(B)/tests/ex-jit $(B)/tests/libmpkit-watch.so $(B)/tests/watch-target
$(B)/tests/ex-jit: $(B)/examples/jit
	@mkdir -p $(@D)
	cp $< $@
$(B)/tests/libmpkit-watch.so: $(B)/libmpkit-watch.so
	@mkdir -p $(@D)
	cp $< $@
$(B)/tests/watch-target: tests/helpers/watch_target.c
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_CFLAGS) -rdynamic $< -o $@

tests: $(TEST_BIN) $(TEST_FILES) $(B)/tests/t_installed $(EX_TEST_BIN)

# ---- the use-case examples (docs/examples.md) ----
# Each is built under $(B)/examples/NAME/ and copied to $(B)/tests/ex/,
# where its test (tests/t_ex_NAME.c) runs it and the VM harness packs it.

$(B)/obj/examples/keyd/%.o $(B)/obj/tests/t_ex_keyd.o: CFLAGS += $(SODIUM_CFLAGS)
$(B)/examples/keyd/%: $(B)/obj/examples/keyd/%.o $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -rdynamic $^ $(SODIUM_LIBS) -o $@
$(B)/tests/t_ex_keyd: $(B)/obj/tests/t_ex_keyd.o $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ $(SODIUM_LIBS) -o $@

$(B)/tests/ex/%: $(B)/examples/keyd/%
	@mkdir -p $(@D)
	cp $< $@

# SQLite (libsqlite3-dev): its allocator in an mpk_heap.
SQLG_OBJ := $(B)/obj/examples/sqlite-guard/guard.o $(B)/obj/examples/sqlite-guard/workload.o
$(B)/obj/examples/sqlite-guard/%.o $(B)/obj/bench/sqlite_guard.o: CFLAGS += $(SQLITE_CFLAGS) -Iexamples/sqlite-guard
$(B)/examples/sqlite-guard/sqlite-guard: $(B)/obj/examples/sqlite-guard/main.o $(SQLG_OBJ) $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -rdynamic $^ $(SQLITE_LIBS) -o $@
$(B)/tests/ex/sqlite-guard: $(B)/examples/sqlite-guard/sqlite-guard
	@mkdir -p $(@D)
	cp $< $@
# A store in a file mapped into a domain (mpk_map_file()).
$(B)/examples/pstore/pstore: $(B)/obj/examples/pstore/main.o $(B)/obj/examples/pstore/store.o $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -rdynamic $^ -o $@
$(B)/tests/ex/pstore: $(B)/examples/pstore/pstore
	@mkdir -p $(@D)
	cp $< $@
# Its throughput with and without the guard (`make bench-sqlite`).
$(B)/mpkit-bench-sqlite: $(B)/obj/bench/sqlite_guard.o $(SQLG_OBJ) $(B)/libmpkit.a
	$(CC) $(LDFLAGS) $^ $(SQLITE_LIBS) -o $@

# ---- install, and a test program built against the installed copy ----

# Man pages: real pages and one-line `.so` links, installed as they are.
MAN1 := $(wildcard man/man1/*.1)
MAN3 := $(wildcard man/man3/*.3)
MAN7 := $(wildcard man/man7/*.7)

mpkit.pc: mpkit.pc.in include/mpkit.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@INCDIR@|$(INCDIR)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

install: all
	@rm -f mpkit.pc
	$(MAKE) --no-print-directory mpkit.pc PREFIX=$(PREFIX) LIBDIR=$(LIBDIR) INCDIR=$(INCDIR)
	install -d $(DESTDIR)$(INCDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PCDIR) $(DESTDIR)$(BINDIR)
	install -m 644 include/mpkit.h $(DESTDIR)$(INCDIR)/
	install -m 644 $(B)/libmpkit.a $(DESTDIR)$(LIBDIR)/
	install -m 755 $(B)/libmpkit.so $(DESTDIR)$(LIBDIR)/libmpkit.so.$(VERSION)
	ln -sf libmpkit.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libmpkit.so
	install -m 644 mpkit.pc $(DESTDIR)$(PCDIR)/
	install -m 755 $(B)/mpkit $(B)/mpkit-bench $(DESTDIR)$(BINDIR)/
	install -m 644 $(B)/libmpkit-watch.so $(DESTDIR)$(LIBDIR)/
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man7
	$(if $(MAN1),install -m 644 $(MAN1) $(DESTDIR)$(MANDIR)/man1/)
	$(if $(MAN3),install -m 644 $(MAN3) $(DESTDIR)$(MANDIR)/man3/)
	$(if $(MAN7),install -m 644 $(MAN7) $(DESTDIR)$(MANDIR)/man7/)
	@rm -f mpkit.pc

STAGE := $(abspath $(B)/stage)
# Prerequisites include all of `install: all`, so the sub-make builds nothing.
$(B)/tests/t_installed: tests/installed/t_installed.c $(B)/libmpkit.so $(B)/libmpkit.a $(B)/mpkit include/mpkit.h
	rm -rf $(STAGE)
	$(MAKE) --no-print-directory install PREFIX=$(STAGE) SANITIZE=$(SANITIZE)
	$(CC) $(CFLAGS) $< -o $@ $$(PKG_CONFIG_PATH=$(STAGE)/lib/pkgconfig pkg-config --cflags --libs mpkit) \
		-Wl,-rpath,$(STAGE)/lib $(LDFLAGS)

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

# Not a test: prints a table of timings (never compared against limits).
BENCH_OUT := $(B)/bench
bench: $(B)/mpkit $(B)/mpkit-bench
	@mkdir -p $(BENCH_OUT)
	$(B)/mpkit bench --csv $(BENCH_OUT)/results.csv --json $(BENCH_OUT)/results.json \
		--plot $(BENCH_OUT)/results.svg $(BENCH_ARGS)

# Not a test: the scale table (lookups, faults, threads, save/restore).
bench-scale: $(B)/mpkit-bench-scale
	$(B)/mpkit-bench-scale

# Not a test either: heap and vault figures with ratios; BENCH_ALLOC_ARGS=--quick.
bench-alloc: $(B)/mpkit-bench-alloc
	$(B)/mpkit-bench-alloc $(BENCH_ALLOC_ARGS)

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
	@tests/check-exports.sh $(B)/libmpkit.so
	@tests/check-man.sh $(B)/libmpkit.so
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
	@tests/check-exports.sh $(B)/libmpkit.so
	@tests/check-man.sh $(B)/libmpkit.so
	@tests/run-tests.sh native $(B)/tests

check-vm: all tests
	@tests/vm/vm.sh $(B) $(B)/tests; vrc=$$?; \
	if [ $$vrc = 77 ] && [ -z "$$MPKIT_VM_REQUIRED" ]; then vrc=0; fi; exit $$vrc

clean:
	rm -rf build mpkit.pc

.PHONY: all tests install demo example-keyd example-sqlite-guard example-pstore bench bench-alloc bench-code bench-sqlite bench-scale check check-native check-vm clean
.SECONDARY:

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
