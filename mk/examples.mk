# mk/examples.mk: the demo, the JIT example and the use cases
# (docs/examples.md), and the goals that run them.  Included by the
# Makefile; their tests are in mk/tests.mk.

# -rdynamic: fault-report backtraces name the example's functions.
$(B)/examples/%: $(B)/obj/examples/%.o $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -rdynamic $^ -o $@

# The JIT example (examples/jit/): its own directory, several files.
JIT_SRC := $(wildcard examples/jit/*.c)
$(B)/examples/jit: $(JIT_SRC:%.c=$(B)/obj/%.o) $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -rdynamic $^ -o $@

# ---- the use-case examples (docs/examples.md) ----
# Each is built under $(B)/examples/NAME/ and copied to $(B)/tests/ex/,
# where its test (tests/t_ex_NAME.c) runs it and the VM harness packs it.
# They need libsodium and SQLite (the copies are made where pkg-config
# found them).
EX_TEST_BIN   := $(if $(SODIUM_OK),$(B)/tests/ex/keyd $(B)/tests/ex/attack) \
                 $(if $(SQLITE_OK),$(B)/tests/ex/sqlite-guard $(B)/mpkit-bench-sqlite) \
                 $(B)/tests/ex/pstore

$(B)/obj/examples/keyd/%.o $(B)/obj/tests/t_ex_keyd.o: MPK_XCFLAGS += $(SODIUM_CFLAGS)
$(B)/examples/keyd/%: $(B)/obj/examples/keyd/%.o $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -rdynamic $^ $(SODIUM_LIBS) -o $@

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

# A store in a file mapped into a domain (mpk_map_file()).
$(B)/examples/pstore/pstore: $(B)/obj/examples/pstore/main.o $(B)/obj/examples/pstore/store.o $(B)/libmpkit.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -rdynamic $^ -o $@
$(B)/tests/ex/pstore: $(B)/examples/pstore/pstore
	@mkdir -p $(@D)
	cp $< $@

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

.PHONY: demo example-keyd example-sqlite-guard example-pstore
