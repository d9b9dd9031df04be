#!/usr/bin/env bash
# run.sh - README's two commands in a minimal Debian 12 root, as a new
# user's machine has them: nothing but what `make demo` and `make check`
# install themselves.
#
# Usage: tests/minroot/run.sh [BUILD_DIR]      (as root; default: build)
#
#   1. debootstrap --variant=minbase bookworm (only once: the pristine
#      root is kept packed in BUILD_DIR/minroot/base.tar.gz, and every run
#      unpacks a fresh copy of it into BUILD_DIR/minroot/root);
#   2. copies a clean tree of the project into its /src: git archive of
#      HEAD, with the uncommitted changes of tracked files when there are
#      some (git stash create), never build output;
#   3. mounts /proc, /sys, /dev, /dev/pts and a /dev/shm for the chroot;
#   4. inside, as root: apt-get update and apt-get install make (README's
#      "with make"; gcc is left to `make demo`, which says it installs it),
#      then `make demo`, which must catch and report its stray read, and
#      `make check` with the VM suite required (qemu and the kernel come as
#      make check fetches them);
#   5. unmounts on every way out (trap); removes the root when both
#      passed, and leaves it for a look when one failed.
#
# Exit status: 0 both commands passed; 1 one failed; 2 usage or setup
# (not root, no debootstrap, the mirror unreachable).
#
# Environment:
#   MINROOT_MIRROR   Debian mirror (default http://deb.debian.org/debian)
#   MINROOT_SUITE    Debian suite (default bookworm)
#   MINROOT_JOBS     make -j (default 2)
#   MINROOT_SHELL=1  a shell in the root after the commands, mounts kept
#   MINROOT_KEEP=1   keep the root after a pass too

set -eu -o pipefail

usage() {
	echo "usage: $0 [BUILD_DIR]" >&2
	exit 2
}
[ $# -le 1 ] || usage
case ${1:-} in -*) usage ;; esac

src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build}
mirror=${MINROOT_MIRROR:-http://deb.debian.org/debian}
suite=${MINROOT_SUITE:-bookworm}
jobs=${MINROOT_JOBS:-2}

log() { echo "minroot: $*" >&2; }
die() { log "$*"; exit 2; }

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot and mounts)"
command -v debootstrap >/dev/null || die "debootstrap not found (apt-get install debootstrap)"
git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || die "$src is not a git tree (the copy is git archive's)"

mkdir -p "$build/minroot"
dir=$(cd "$build/minroot" && pwd -P)
root=$dir/root
base=$dir/base.tar.gz

# mounted_under DIR: the mount points at or below DIR, deepest first.
mounted_under() {
	awk -v d="$1" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r
}

# The chroot's processes (a qemu left by a timeout, an agent apt started):
# ended by their ids, or the mounts would stay busy.
kill_inside() {
	local p r
	for p in /proc/[0-9]*; do
		r=$(readlink "$p/root" 2>/dev/null) || continue
		case $r in "$dir"/*) kill -KILL "${p#/proc/}" 2>/dev/null || true ;; esac
	done
}

# Everything mounted below BUILD_DIR/minroot: this run's, and what an
# interrupted debootstrap left in its target.
unmount_all() {
	local m
	kill_inside
	for m in $(mounted_under "$dir"); do
		umount "$m" 2>/dev/null || umount -l "$m" || log "warning: cannot unmount $m"
	done
}

# fresh_root: remove the last run's root (never across a mount: the host's
# /dev would go with it) and unpack the pristine one.
fresh_root() {
	unmount_all
	[ -z "$(mounted_under "$dir")" ] || die "$dir still has mounts; not removing anything"
	rm -rf --one-file-system "$root"
	mkdir -p "$root"
	tar -C "$root" -xzf "$base"
}

trap unmount_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
t0=$(date +%s)
if [ ! -s "$base" ]; then
	log "debootstrap --variant=minbase $suite from $mirror (once: kept in $base)"
	unmount_all
	rm -rf --one-file-system "${dir:?}/boot"
	debootstrap --variant=minbase "$suite" "$dir/boot" "$mirror" >&2 ||
		die "debootstrap failed (its log: $dir/boot/debootstrap/debootstrap.log)"
	# apt's downloaded .debs are not part of a fresh system.
	rm -rf "$dir/boot/var/cache/apt/archives/"*.deb
	tar -C "$dir/boot" --numeric-owner -czf "$base.tmp" .
	mv "$base.tmp" "$base"
	rm -rf --one-file-system "${dir:?}/boot"
fi
fresh_root
t1=$(date +%s)
log "fresh root in $root ($((t1 - t0)) s)"

# The project as a clone has it.
rev=$(git -C "$src" stash create 2>/dev/null || true)
if [ -n "$rev" ]; then
	log "copying HEAD with the uncommitted changes of tracked files ($rev)"
else
	rev=HEAD
	log "copying HEAD ($(git -C "$src" rev-parse --short HEAD))"
fi
mkdir -p "$root/src"
git -C "$src" archive "$rev" | tar -C "$root/src" -xf -

# Name resolution for apt inside.
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
mount -t tmpfs -o mode=1777,nosuid,nodev shm "$root/dev/shm"

inside() {
	chroot "$root" /usr/bin/env -i HOME=/root LC_ALL=C.UTF-8 \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

rc=0
log "apt-get install make (README: \"On Debian 12 with gcc and make\"; make demo installs gcc)"
inside sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends make' >&2 ||
	die "apt-get install make failed in the root"
t2=$(date +%s)

log "make demo"
inside sh -c "cd /src && make -j$jobs demo" 2>&1 | tee "$dir/demo.log" || rc=1
if [ $rc = 0 ]; then
	if ! grep -q 'protection fault: read of domain "tls-keys"' "$dir/demo.log" ||
		! grep -q '^caught:' "$dir/demo.log"; then
		log "make demo ran but did not report its stray read"
		rc=1
	fi
fi
t3=$(date +%s)

if [ $rc = 0 ]; then
	log "make check"
	inside sh -c "cd /src && MPKIT_VM_REQUIRED=1 make -j$jobs check" 2>&1 | tee "$dir/check.log" || rc=1
fi
t4=$(date +%s)

if [ "${MINROOT_SHELL:-}" = 1 ]; then
	log "a shell in the root (exit to unmount)"
	inside bash -l || true
fi

log "root $((t1 - t0)) s, make $((t2 - t1)) s, make demo $((t3 - t2)) s, make check $((t4 - t3)) s; total $((t4 - t0)) s"
if [ $rc = 0 ]; then
	if [ "${MINROOT_KEEP:-}" != 1 ]; then
		unmount_all
		[ -n "$(mounted_under "$dir")" ] || rm -rf --one-file-system "$root"
	fi
	log "PASS: README's two commands in a minimal $suite root"
else
	log "FAIL: README's two commands in a minimal $suite root (logs: $dir/demo.log, $dir/check.log)"
fi
exit $rc
