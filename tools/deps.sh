#!/bin/sh
# deps.sh - the Debian packages that mpkit's make targets and CI need: the
# one list.  `make demo` asks for the build group, `make check` for build
# and test, `make bench*` for build, test and bench, tests/vm/vm.sh for vm,
# .ci/run for all of them.
#
# Usage: tools/deps.sh [--list] GROUP...      GROUP: build test vm bench ci all
#
# Installs what is missing of the GROUPs' packages: as root with apt-get
# (after apt-get update when apt knows no candidate for one of them, or
# when the install fails on stale lists); as another user it prints one
# line naming them and exits 1.  Prints nothing and exits 0 when nothing is
# missing, and on a system without dpkg (nothing to check there: a build
# that lacks something fails, a test that lacks something skips).  --list
# prints the GROUPs' packages, one a line, and exits.  Exit status: 0 all
# there, 1 something missing and not installed, 2 usage.
# Messages go to stdout (the Makefile shows them as its error); apt's
# output to stderr.

set -u

# What each group needs, and for what.
# build: the library, the mpkit command, the demo (`make`, `make demo`).
build="gcc make libc6-dev"
# test: `make check`'s native suite builds every test and example:
# libsodium (keyd, the benchmark's rows), libssl-dev (the vault benchmark's
# OpenSSL secure-heap rows) and SQLite (sqlite-guard) found
# through pkg-config, which also builds t_installed; valgrind runs
# t_heap_valgrind, groff, man-db (man, lexgrog) and mandoc lint the man
# pages; t_malloc_programs runs python3, sqlite3, git, xz and zstd with
# the drop-in allocator preloaded (each skips when missing), and `mpkit
# bench malloc` runs them (t_cli_bench_malloc: sqlite3); t_guard_real
# runs sqlite3, xmllint (libxml2-utils), git and openssl with a library of
# each guarded by `mpkit guard`; g++ builds t_guard_unwind's C++ library
# and program (exceptions across the guard's gate).
test="g++ pkg-config libsodium-dev libssl-dev libsqlite3-dev valgrind groff-base man-db mandoc python3 sqlite3 git xz-utils zstd libxml2-utils openssl"
# vm: the VM suite's emulator (tests/vm/vm.sh fetches a static busybox and
# the kernel into build/vm/ itself).
vm="qemu-system-x86"
# bench: what `make bench*` adds to the test group: gnuplot for the plots,
# jemalloc and mimalloc for bench-malloc's and bench-rss's columns.
bench="gnuplot-nox libjemalloc2 libmimalloc2.0"
# ci: the rest of .ci/run: the allocators' headers, check-cmake,
# check-deb, abi-check, and the other toolchains' native suites (clang;
# musl-gcc from musl-tools, whose kernel headers come from linux-libc-dev).
ci="libjemalloc-dev libmimalloc-dev cmake dpkg-dev debhelper lintian abigail-tools clang musl-tools linux-libc-dev"

usage() {
	echo "usage: $0 [--list] build|test|vm|bench|ci|all..." >&2
	exit 2
}

list=
[ "${1:-}" = --list ] && { list=1; shift; }
[ $# -gt 0 ] || usage
want=
for g in "$@"; do
	case $g in
		build) want="$want $build" ;;
		test) want="$want $test" ;;
		vm) want="$want $vm" ;;
		bench) want="$want $bench" ;;
		ci) want="$want $ci" ;;
		all) want="$want $build $test $vm $bench $ci" ;;
		*) usage ;;
	esac
done
if [ -n "$list" ]; then
	printf '%s\n' $want
	exit 0
fi

command -v dpkg-query >/dev/null 2>&1 || exit 0

missing=
for p in $want; do
	case " $missing " in *" $p "*) continue ;; esac
	[ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)" = "ii " ] ||
		missing="$missing $p"
done
missing=${missing# }
[ -n "$missing" ] || exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "deps: missing Debian packages: $missing; install them (sudo apt-get install $missing) or run this as root, which installs them"
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
updated=
update() {
	[ -z "$updated" ] || return 1
	updated=1
	apt-get update -q >&2
}
install() {
	# shellcheck disable=SC2086
	apt-get install -y -q --no-install-recommends $missing >&2
}
# A fresh machine (or container) may have no package lists at all.
for p in $missing; do
	if ! apt-cache policy "$p" 2>/dev/null | grep -q 'Candidate: [^(]'; then
		update || { echo "deps: apt-get update failed (its output is above)"; exit 1; }
		break
	fi
done
echo "deps: installing $missing" >&2
install || { update && install; } ||
	{ echo "deps: apt-get install $missing failed (its output is above)"; exit 1; }
