# mk/install.mk: install and uninstall (the library, the header, the
# mpkit command and its helpers, pkg-config and CMake files, the man pages
# and docs), and the tests of the installed copy: a staged install, a live
# one, check-cmake.  Included by the Makefile.

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

$(GUARD_API_OBJ): $(INST)/layout
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
$(INST)/libmpkit-guard.so: $(B)/libmpkit-guard.so $(INST)/layout
	$(CC) $(GUARD_LINK) $(call inst_rpath,$(HELPER_DIR)) -o $@
$(INST)/libmpkit-malloc.so: $(B)/libmpkit-malloc.so $(INST)/layout
	$(CC) $(MALLOC_LINK) $(call inst_rpath,$(HELPER_DIR)) -o $@
# What goes into $(HELPER_DIR): mpkit-bench-scale, mpkit-bench-malloc and
# mpkit-bench-guard are linked statically, the latter's workloads ($(MW_BIN)) to libc only.
HELPERS := $(addprefix $(INST)/,mpkit-bench mpkit-bench-alloc mpkit-bench-vault mpkit-bench-threads) $(B)/mpkit-bench-scale \
	   $(B)/mpkit-bench-malloc $(B)/mpkit-bench-guard $(MW_BIN)

# Each installed file, as a path under DESTDIR, for install and uninstall.
INST_FILES = $(INCDIR)/mpkit.h $(LIBDIR)/libmpkit.a $(LIBDIR)/libmpkit.so.$(VERSION) \
	$(LIBDIR)/$(SONAME) $(LIBDIR)/libmpkit.so $(PCDIR)/mpkit.pc \
	$(CMAKEDIR)/mpkitConfig.cmake $(CMAKEDIR)/mpkitConfigVersion.cmake \
	$(BINDIR)/mpkit $(addprefix $(HELPER_DIR)/,$(notdir $(HELPERS)) libmpkit-watch.so libmpkit-guard.so libmpkit-malloc.so) \
	$(patsubst man/%,$(MANDIR)/%,$(MAN1) $(MAN3) $(MAN7)) $(patsubst docs/%,$(DOCDIR)/%,$(DOCS))
INST_DIRS = $(CMAKEDIR) $(HELPER_DIR) $(sort $(patsubst %/,%,$(dir $(patsubst docs/%,$(DOCDIR)/%,$(DOCS))))) $(DOCDIR)

install: $(ALL_BIN) $(INST)/mpkit $(INST)/libmpkit-watch.so $(INST)/libmpkit-guard.so $(INST)/libmpkit-malloc.so $(HELPERS) gen-install-files
	install -d $(DESTDIR)$(INCDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PCDIR) $(DESTDIR)$(BINDIR) \
		$(DESTDIR)$(CMAKEDIR) $(DESTDIR)$(HELPER_DIR)
	install -m 644 include/mpkit.h $(DESTDIR)$(INCDIR)/
	install -m 644 $(B)/libmpkit.a $(DESTDIR)$(LIBDIR)/
	install -m 644 $(B)/libmpkit.so $(DESTDIR)$(LIBDIR)/libmpkit.so.$(VERSION)
	ln -sf libmpkit.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libmpkit.so
	install -m 644 $(INST)/libmpkit-watch.so $(INST)/libmpkit-guard.so $(INST)/libmpkit-malloc.so $(DESTDIR)$(HELPER_DIR)/
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

.PHONY: install uninstall gen-install-files check-cmake
