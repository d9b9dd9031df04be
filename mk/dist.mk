# mk/dist.mk: a release: the tarball (dist), its check (distcheck), the
# Debian packages built from it (check-deb) and the ABI against the last
# release (abi-check).  Included by the Makefile.

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

.PHONY: dist distcheck check-deb abi-check abi-baseline
