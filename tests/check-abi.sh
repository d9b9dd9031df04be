#!/bin/sh
# The ABI of BUILD/libmpkit.so against the last release's, stored in
# abi/libmpkit-VERSION.abi (abidw's XML) and named by abi/BASELINE.  An
# incompatible change (a removed or changed function, a struct that changed
# layout) fails; additions are listed and pass.  Before the first release
# there is no baseline: the check says so, and proves the tools work by
# comparing the library with itself.
#   check-abi.sh LIBMPKIT_SO            compare
#   check-abi.sh LIBMPKIT_SO --store    write the baseline for this version
set -eu
lib=${1:?usage: check-abi.sh LIBMPKIT_SO [--store]}
top=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n 's/^#define MPK_VERSION_STRING "\(.*\)"/\1/p' "$top/include/mpkit.h")
command -v abidw >/dev/null && command -v abidiff >/dev/null ||
	{ echo "abi: FAIL, abidw/abidiff not found (apt-get install abigail-tools)"; exit 1; }
hdr="--headers-dir $top/include"

if [ "${2:-}" = --store ]; then
	abidw $hdr --out-file "$top/abi/libmpkit-$version.abi" "$lib"
	echo "$version" > "$top/abi/BASELINE"
	echo "abi: stored abi/libmpkit-$version.abi as the baseline; commit it with the release tag"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
base=$(cat "$top/abi/BASELINE" 2>/dev/null || true)
if [ -z "$base" ]; then
	abidw $hdr --out-file "$tmp/self.abi" "$lib"
	abidiff "$tmp/self.abi" "$lib" >/dev/null ||
		{ echo "abi: FAIL, abidiff of the library against its own abidw output"; exit 1; }
	echo "abi: no released baseline yet ($version is the first release): after tagging, make abi-baseline"
	exit 0
fi
ref="$top/abi/libmpkit-$base.abi"
[ -f "$ref" ] || { echo "abi: FAIL, abi/BASELINE names $base but $ref is missing"; exit 1; }
rc=0
abidiff $hdr "$ref" "$lib" >"$tmp/report" || rc=$?
if [ $((rc & 8)) -ne 0 ] || [ $((rc & 3)) -ne 0 ]; then
	cat "$tmp/report"
	echo "abi: FAIL, $version breaks the ABI of $base (abidiff exit $rc); see docs/abi.md"
	exit 1
fi
[ $rc = 0 ] || sed 's/^/    /' "$tmp/report"
echo "abi: $version is compatible with $base"
