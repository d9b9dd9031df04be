# mk/tests.mk: the tests (tests/t_*.c, picked up by the wildcard), their
# kit, the files they run, and the check goals.  Included by the Makefile
# after mk/examples.mk and mk/bench.mk: `make tests` builds their programs
# too.  The tests of the installed copy are in mk/install.mk.

TEST_SRC := $(sort $(wildcard tests/t_*.c))
TEST_BIN := $(TEST_SRC:tests/%.c=$(B)/tests/%)
# The test kit (tests/t.c, tests/kit/*.c), compiled once per build
# directory into a static library every test program links.
KIT_SRC  := tests/t.c $(sort $(wildcard tests/kit/*.c))
KIT_LIB  := $(B)/obj/tests/libt.a
$(KIT_LIB): $(KIT_SRC:%.c=$(B)/obj/%.o)
	@rm -f $@
	$(AR) rcs $@ $^

# Unit tests of internals: the scanner (src/shared/), the core's state.
$(B)/obj/tests/t_scan_%.o: MPK_XCFLAGS += -Isrc/shared
$(B)/obj/tests/t_soft_domain_lock.o $(B)/obj/tests/t_soft_fork_lock.o: MPK_XCFLAGS += -Isrc/core
# The VM smoke test of the benchmark engine: tiny sizes, both backends.
$(B)/tests/t_bench_smoke: $(B)/obj/tests/t_bench_smoke.o $(BENCH_OBJ) $(KIT_LIB) $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(BENCH_LIBS) -lm -o $@

$(B)/tests/%: $(B)/obj/tests/%.o $(KIT_LIB) $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ -o $@
# It tells mpkit's code from the program's by the shared library's mapping;
# -rdynamic: its malloc is the one every library calls.  Its stacks come
# from src/shared/unwind.c.
$(B)/obj/tests/t_ialloc_no_malloc.o: MPK_XCFLAGS += -Isrc/shared
$(B)/tests/t_ialloc_no_malloc: $(B)/obj/tests/t_ialloc_no_malloc.o $(B)/obj/src/shared/unwind.o $(KIT_LIB) $(B)/libmpkit.so
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -rdynamic $^ $(SO_RPATH) -o $@

# The guard helper's index of heap blocks (tools/guard_blocks.c), alone.
$(B)/obj/tests/t_guard_blocks.o: MPK_XCFLAGS += -Itools
$(B)/tests/t_guard_blocks: $(B)/obj/tests/t_guard_blocks.o $(B)/obj/tools/guard_blocks.o $(KIT_LIB) $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ -o $@

# mpk_guard_library() opens a helper that links libmpkit.so: the program
# must link it too (linked statically, the call refuses, ENOTSUP).
$(B)/tests/t_guard_api: $(B)/obj/tests/t_guard_api.o $(KIT_LIB) $(B)/libmpkit.so
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(SO_RPATH) -ldl -o $@

# A test whose optional library pkg-config did not find (or that a musl
# build cannot use) is a script that skips, naming the library and why:
# the other tests build and run (make check installs the library first,
# so this is DEPS=no, not Debian, or musl).  Dated
# 1970, so that the real test is linked over it once the library is there.
skip_test = @mkdir -p $(@D) && \
	printf '\043!/bin/sh\necho "skip: built without %s (%s)"\nexit 77\n' \
		'$(1)' '$(call opt_why,$(2))' > $@ && chmod 755 $@ && touch -d @0 $@ && echo "$(@F): built without $(1), it will skip"
# The use cases' tests link the example's library, or are such a script.
ifeq ($(SODIUM_OK),yes)
$(B)/tests/t_ex_keyd: $(B)/obj/tests/t_ex_keyd.o $(KIT_LIB) $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(SODIUM_LIBS) -o $@
else
$(B)/tests/t_ex_keyd: FORCE
	$(call skip_test,libsodium,libsodium-dev)
endif
ifneq ($(SQLITE_OK),yes)
$(B)/tests/t_ex_sqlite_guard: FORCE
	$(call skip_test,SQLite,libsqlite3-dev)
endif

# Files the tests run (copied next to them, so the VM image has them too):
# the JIT example, `mpkit watch`'s helper with a program to watch, the
# scan's lockdown test linked statically (glibc's static start-up code
# carries ld.so's trampolines too; no sanitizer links statically), and
# the shared library for `mpkit scan` to read.
TEST_FILES := $(B)/tests/ex-jit $(B)/tests/libmpkit-watch.so $(B)/tests/watch-target \
	      $(B)/tests/libmpkit-guard.so $(B)/tests/guard-prog $(B)/tests/guard-dlprog $(B)/tests/guard-heap-prog $(B)/tests/libguardheap.so \
	      $(B)/tests/libguardtwo.so $(B)/tests/guard-two-prog \
	      $(B)/tests/watch-plain $(B)/tests/watch-plain-stripped \
	      $(B)/tests/libmpkit-malloc.so $(B)/tests/malloc-edge $(B)/tests/malloc-stress $(B)/tests/malloc-misuse $(B)/tests/malloc-args \
	      $(B)/tests/malloc-misuse-static \
	      $(B)/tests/malloc-calloc $(B)/tests/malloc-boot \
	      $(B)/tests/malloc-stress-static $(B)/tests/bench-noise.so \
	      $(B)/tests/t_scan_lockdown_static $(B)/tests/scan-libmpkit.so $(B)/tests/scan-cc/built
# t_guard_unwind's C++ library and the program that catches what it
# throws (g++, or clang++ with clang), where the C library has a C++
# compiler (musl-gcc has none: the test skips, saying so).
GUARD_CXX := $(if $(filter glibc,$(LIBC)),$(if $(findstring clang,$(CC)),clang++,g++))
GUARD_CXX_OK := $(if $(GUARD_CXX),$(shell command -v $(GUARD_CXX) >/dev/null 2>&1 && echo yes))
GUARD_CXXFLAGS = $(filter-out -std=% -Wstrict-prototypes -Wmissing-prototypes,$(PRELOAD_CFLAGS))
ifeq ($(GUARD_CXX_OK),yes)
TEST_FILES += $(B)/tests/libguardxx.so $(B)/tests/guard-xxprog
endif
$(B)/tests/ex-jit: $(B)/examples/jit
	@mkdir -p $(@D)
	cp $< $@
$(B)/tests/libmpkit-watch.so: $(B)/libmpkit-watch.so
	@mkdir -p $(@D)
	cp $< $@
$(B)/tests/libmpkit-malloc.so: $(B)/libmpkit-malloc.so
	@mkdir -p $(@D)
	cp $< $@
$(B)/tests/libmpkit-guard.so: $(B)/libmpkit-guard.so
	@mkdir -p $(@D)
	cp $< $@
# t_guard_cli's library and the program that calls it ($$ORIGIN: the VM
# has them side by side too).
$(B)/tests/libguardtest.so: tests/helpers/guard_lib.c
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_CFLAGS) -shared -fPIC -Wl,-soname,libguardtest.so $< -pthread -o $@
$(B)/tests/guard-prog: tests/helpers/guard_prog.c tests/helpers/step_count.h $(B)/tests/libguardtest.so
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_CFLAGS) $< -L$(@D) -lguardtest -Wl,-rpath,'$$ORIGIN' -pthread -ldl -o $@
# t_guard_multi's second library, which calls the first, and the program
# that links both.
$(B)/tests/libguardtwo.so: tests/helpers/guard_two_lib.c tests/helpers/guard_two_lib.h tests/helpers/guard_lib.h $(B)/tests/libguardtest.so
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_CFLAGS) -shared -fPIC -Wl,-soname,libguardtwo.so $< -L$(@D) -lguardtest -Wl,-rpath,'$$ORIGIN' -o $@
$(B)/tests/guard-two-prog: tests/helpers/guard_two_prog.c $(B)/tests/libguardtwo.so
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_CFLAGS) $< -L$(@D) -lguardtwo -lguardtest -Wl,-rpath,'$$ORIGIN' -o $@
# t_guard_heap's library, whose heap blocks are guarded, and its program.
$(B)/tests/libguardheap.so: tests/helpers/guard_heap_lib.c tests/helpers/guard_heap_lib.h
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_CFLAGS) -shared -fPIC -Wl,-soname,libguardheap.so $< -o $@
$(B)/tests/guard-heap-prog: tests/helpers/guard_heap_prog.c tests/helpers/guard_heap_lib.h $(B)/tests/libguardheap.so
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_CFLAGS) $< -L$(@D) -lguardheap -Wl,-rpath,'$$ORIGIN' -o $@
$(B)/tests/libguardxx.so: tests/helpers/guard_xxlib.cc tests/helpers/guard_xx.h
	@mkdir -p $(@D)
	$(GUARD_CXX) $(GUARD_CXXFLAGS) -shared -fPIC -Wl,-soname,libguardxx.so $< -o $@
$(B)/tests/guard-xxprog: tests/helpers/guard_xxprog.cc tests/helpers/guard_xx.h $(B)/tests/libguardxx.so
	@mkdir -p $(@D)
	$(GUARD_CXX) $(GUARD_CXXFLAGS) $< -L$(@D) -lguardxx -Wl,-rpath,'$$ORIGIN' -pthread -o $@
# ... and one that opens it with dlopen() (from its own directory).
$(B)/tests/guard-dlprog: tests/helpers/guard_dlprog.c $(B)/tests/libguardtest.so
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_CFLAGS) $< -ldl -o $@
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
# t_cli_bench_malloc's stand-in for the drop-in (t_cli_bench_guard's for
# the guard helper): it prints a line more.
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
				   $(filter-out %/features/guard.o,$(LIB_SRC:%.c=$(B)/preload/%.o))
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

.PHONY: FORCE tests check check-native check-malloc check-vm check-readme
