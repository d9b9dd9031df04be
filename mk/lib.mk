# mk/lib.mk: the library, and the programs and helpers that link it which
# plain `make` builds: the mpkit command, `mpkit watch`'s LD_PRELOAD helper
# and the drop-in allocator (`mpkit run`).  Included by the Makefile.

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
HEAP_SRC := $(addprefix src/heap/,meta.c seal.c map.c run.c big.c heap.c calls.c misuse.c cache.c fork.c vault.c vlist.c)
LOCKDOWN_SRC := $(addprefix src/lockdown/,lockdown.c lockdown_bpf.c lockdown_exec.c landlock.c)
FEATURE_SRC := src/features/code.c src/features/watch.c src/features/guard.c
LIB_SRC := $(ARCH_SRC) $(SHARED_SRC) $(CORE_SRC) $(HEAP_SRC) $(LOCKDOWN_SRC) $(FEATURE_SRC)
LIB_OBJ := $(LIB_SRC:%.c=$(B)/obj/%.o)
PIC_OBJ := $(LIB_SRC:%.c=$(B)/pic/%.o)

# The formats the library shares with the tools (src/shared/): the mpkit
# command and the benchmarks link these objects of their own, never the
# library's internals.
SHARED_OBJ := $(B)/obj/src/shared/procmaps.o $(B)/obj/src/shared/mapcheck.o

$(B)/libmpkit.a: $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

# Hidden visibility keeps internals out; the version script is the list.
# $(call link_lib,LDFLAGS,OBJECTS): $@ and the SONAME link beside it.
# -static-libgcc: reports' unwinder inside the library (src/shared/unwind.c),
# no libgcc_s loaded at every start.  src/libmpkit-hot.ld puts the
# functions a program's start runs together (each in its own section).
link_lib = $(CC) -shared -static-libgcc -Wl,-soname,$(SONAME) -Wl,--version-script=src/libmpkit.map \
		-Wl,-T,src/libmpkit-hot.ld \
		-Wl,-z,defs -Wl,-z,now $(1) $(2) -o $@ && ln -sf libmpkit.so $(@D)/$(SONAME)
$(PIC_OBJ): MPK_XCFLAGS += -ffunction-sections
$(B)/libmpkit.so: $(PIC_OBJ) src/libmpkit.map src/libmpkit-hot.ld
	$(call link_lib,$(ALL_LDFLAGS),$(PIC_OBJ))

# Programs that use only the public API link libmpkit.so, so that a fixed
# libmpkit.so.0 reaches them.  In the build tree a RUNPATH naming $(B)
# finds it; make install links them again for their installed place (INST
# in mk/install.mk).
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
             watch_trace.o guard.o guard_opts.o bench.o symbolize.o) $(CLI_LIB_SRC:%.c=$(B)/obj/%.o) $(SHARED_OBJ) $(B)/obj/src/shared/json.o
$(B)/mpkit: $(CLI_OBJ) $(B)/obj/tools/paths.o $(B)/libmpkit.so
	$(CC) $(ALL_LDFLAGS) $^ $(SO_RPATH) -o $@
$(B)/obj/tools/paths.o: MPK_XCFLAGS += -DMPKIT_DOCDIR='"$(abspath docs)"'
# mpk_guard_library() finds the guard helper from libmpkit.so's own
# directory, the way from LIBDIR to the helpers' once installed
# (mk/install.mk rebuilds it when the layout changes).
GUARD_API_OBJ := $(addsuffix /src/features/guard.o,$(B)/obj $(B)/pic $(B)/preload)
$(GUARD_API_OBJ): MPK_XCFLAGS += -DMPKIT_GUARD_REL='"$(call relpath,$(LIBDIR),$(HELPER_DIR))"'

# `mpkit watch`'s LD_PRELOAD helper links libmpkit.so, or in a sanitizer
# build the library's objects compiled without sanitizers.
HELPER_LIB := $(if $(SANITIZE),$(B)/preload/libmpkit.so,$(B)/libmpkit.so)
$(LIB_SRC:%.c=$(B)/preload/%.o): MPK_XCFLAGS += -ffunction-sections
$(B)/preload/libmpkit.so: $(LIB_SRC:%.c=$(B)/preload/%.o) src/libmpkit.map src/libmpkit-hot.ld
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

# `mpkit guard`'s LD_PRELOAD helper (docs/guard.md), linked as the watch
# helper is; the exports' first instructions are decoded with a copy of
# its own of the decoder (src/shared/insn.c) and of the maps reader (the
# gates' mapping goes in the gap nearest the library); --report's
# backtraces come from one of src/shared/unwind.c, its fault reports'
# text buffers from one of src/shared/trace.c.
GUARD_OBJ := $(addprefix $(B)/preload/tools/,guard_preload.o guard_patch.o guard_gate.o guard_unwind.o guard_report.o guard_wrap.o guard_stats.o guard_heap.o \
		guard_opts.o guard_blocks.o) \
	     $(B)/preload/src/shared/insn.o $(B)/preload/src/shared/insn_0f.o $(B)/preload/src/shared/unwind.o \
	     $(B)/preload/src/shared/procmaps.o $(B)/preload/src/shared/trace.o
# guard_unwind.c's <unwind.h> is the compiler's, not src/shared's: its
# unwinder (libgcc_s with glibc, as the C++ runtime's; musl-gcc links
# libgcc_eh).
$(B)/preload/tools/guard_unwind.o: MPK_XCFLAGS :=
GUARD_LINK = -shared -Wl,--version-script=tools/guard_preload.map -Wl,-z,defs -Wl,-z,now \
	$(PRELOAD_LDFLAGS) $(GUARD_OBJ) $(HELPER_LIB)
$(B)/libmpkit-guard.so: $(GUARD_OBJ) $(HELPER_LIB) tools/guard_preload.map
	$(CC) $(GUARD_LINK) -Wl,-rpath,$(abspath $(dir $(HELPER_LIB))) -o $@

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
# Its calls into libmpkit.so through the GOT, not a PLT stub: one jump
# less each way on malloc's and free's fast path (bound at load: -z now).
$(MALLOC_DROPIN_OBJ): MPK_XCFLAGS += -fno-plt
MALLOC_SHARED_OBJ := $(B)/preload/src/shared/trace.o $(B)/preload/src/shared/unwind.o
MALLOC_LINK = -shared -static-libgcc -Wl,--version-script=src/malloc/malloc.map -Wl,-z,defs -Wl,-z,now \
	$(PRELOAD_LDFLAGS) $(MALLOC_DROPIN_OBJ) $(MALLOC_SHARED_OBJ) $(HELPER_LIB)
$(B)/libmpkit-malloc.so: $(MALLOC_DROPIN_OBJ) $(MALLOC_SHARED_OBJ) $(HELPER_LIB) src/malloc/malloc.map
	$(CC) $(MALLOC_LINK) -Wl,-rpath,$(abspath $(dir $(HELPER_LIB))) -o $@
# For a static program (the VM's stress test), one object with the
# library's objects in it, linked with -r so that --wrap applies to
# mpkit's objects alone: their malloc() calls go to the internal
# allocator (src/malloc/boot.c), never to the heap they are inside.
# mpk_guard_library() is left out: it dlopen()s a helper that links
# libmpkit.so, nothing a static program can do.
MALLOC_LIB_OBJ := $(filter-out %/features/guard.o,$(if $(SANITIZE),$(LIB_SRC:%.c=$(B)/preload/%.o),$(PIC_OBJ)))
MALLOC_WRAP_LD := --wrap=malloc --wrap=calloc --wrap=realloc --wrap=free
$(B)/libmpkit-malloc.o: $(MALLOC_DROPIN_OBJ) $(B)/preload/src/malloc/wrap.o $(MALLOC_LIB_OBJ)
	$(LD) -r $(MALLOC_WRAP_LD) $^ -o $@

