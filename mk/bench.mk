# mk/bench.mk: the benchmark programs (bench/; `make benchmarks` builds
# them all, `make` none) and the goals that run them.  Included by the
# Makefile.

BENCH_SRC := bench/options.c bench/engine.c bench/group.c bench/methods.c bench/sample.c bench/probe.c bench/gnuplot.c \
             bench/machine.c bench/extent.c bench/report.c bench/plot.c
BENCH_OBJ := $(BENCH_SRC:%.c=$(B)/obj/%.o) $(SHARED_OBJ) $(B)/obj/src/shared/dynsym.o $(B)/obj/src/shared/json.o
# Its own workloads (bench/mw_*.c, built below): named before BENCH_BIN,
# which expands them at once.
MW_NAMES := loop prodcons larson churn small large count
MW_BIN := $(MW_NAMES:%=$(B)/mpkit-bench-mw-%)
# Every benchmark program: `make benchmarks` (and bench, check, install)
# builds them, `make` does not.
BENCH_BIN := $(addprefix $(B)/,mpkit-bench mpkit-bench-alloc mpkit-bench-vault mpkit-bench-threads mpkit-bench-scale \
             mpkit-bench-broadcast mpkit-bench-lockdown mpkit-bench-code mpkit-bench-rss mpkit-bench-malloc \
             mpkit-bench-guard) \
             $(MW_BIN) $(if $(SQLITE_OK),$(B)/mpkit-bench-sqlite)

benchmarks: $(BENCH_BIN)

# `mpkit bench` runs this program, found next to the mpkit binary.  The
# installed benchmarks link libmpkit.so: they measure what a program
# linked to it gets.  Their link lines (objects, then libraries) are
# named, for INST (mk/install.mk) to link them again.
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
BENCH_MALLOC_OBJ := $(addprefix $(B)/obj/bench/,malloc.o malloc_run.o malloc_work.o malloc_count.o gnuplot.o options.o)
$(B)/mpkit-bench-malloc: $(BENCH_MALLOC_OBJ) $(B)/libmpkit.a
	$(CC) $(ALL_LDFLAGS) $^ -lm -o $@
# Real programs with a library guarded and not (`make bench-guard`;
# `mpkit bench guard`): bench malloc's runs and two of its workloads, the
# helper found beside it.  Static, as bench malloc.
BENCH_GUARD_OBJ := $(addprefix $(B)/obj/bench/,guard.o malloc_run.o malloc_work.o gnuplot.o options.o)
$(B)/mpkit-bench-guard: $(BENCH_GUARD_OBJ) $(B)/libmpkit.a
	$(CC) $(ALL_LDFLAGS) $^ -lm -o $@
# Its own workloads (bench/mw_*.c) and the fast path's counted loop
# (mw_count.c), found beside it: programs of their own that link the C
# library only, built without sanitizers, for LD_PRELOAD to put each
# allocator beneath them as it does beneath the real programs.
$(B)/mpkit-bench-mw-%: bench/mw_%.c bench/mw.h $(B)/config
	$(CC) $(PRELOAD_CFLAGS) $< -pthread -o $@

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

# JIT patching and watchpoints against mprotect (`make bench-code`).
$(B)/mpkit-bench-code: $(B)/obj/bench/code.o $(B)/obj/bench/options.o $(B)/libmpkit.a
	$(CC) $(ALL_LDFLAGS) $^ -pthread -o $@
# The SQLite example (mk/examples.mk) with and without its guard
# (`make bench-sqlite`).
$(B)/mpkit-bench-sqlite: $(B)/obj/bench/sqlite_guard.o $(B)/obj/bench/options.o $(SQLG_OBJ) $(B)/libmpkit.a
	$(CC) $(ALL_LDFLAGS) $^ $(SQLITE_LIBS) -o $@

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

# Not a test: real programs and its own workloads under five allocators,
# ratios to glibc, the plot in build/bench/malloc.svg;
# BENCH_MALLOC_ARGS="--reps 3 --workloads git,loop", or --count.
bench-malloc: $(B)/mpkit-bench-malloc $(MW_BIN) $(B)/libmpkit-malloc.so
	@mkdir -p $(BENCH_OUT)
	$(B)/mpkit-bench-malloc --plot $(BENCH_OUT)/malloc.svg $(BENCH_MALLOC_ARGS)

# Not a test: real programs guarded against unguarded, on each backend
# there is; BENCH_GUARD_ARGS="--reps 3 --workloads sqlite,py-bz2".
bench-guard: $(B)/mpkit-bench-guard $(B)/libmpkit-guard.so
	$(B)/mpkit-bench-guard $(BENCH_GUARD_ARGS)

# Not a test: JIT patch+run and watched writes against mprotect.
bench-code: $(B)/mpkit-bench-code
	$(B)/mpkit-bench-code $(BENCH_CODE_ARGS)
# SQLite's workload with its memory guarded and not, side by side.
bench-sqlite: $(B)/mpkit-bench-sqlite
	$(B)/mpkit-bench-sqlite $(BENCH_SQLITE_ARGS)

.PHONY: benchmarks bench bench-alloc bench-code bench-guard bench-malloc bench-rss bench-scale bench-sqlite bench-vault
