#!/bin/sh
# The shared library exports exactly the symbols src/libmpkit.map lists,
# every function include/mpkit.h declares is in the map, and each symbol
# carries the version node of the map.  Each problem is named with the fix.
lib=${1:?usage: check-exports.sh LIBMPKIT_SO}
top=$(cd "$(dirname "$0")/.." && pwd)
map=$top/src/libmpkit.map
hdr=$top/include/mpkit.h
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

nm -D --defined-only "$lib" | awk '$2 ~ /[TDBRVW]/ && $3 !~ /^MPKIT_/ { print $3 }' |
	sed 's/@.*//' | sort -u > "$tmp/exported"
# The names in the map's global: lists (lines "name;" inside a node).
sed -n 's/^[ 	]*\(mpk_[A-Za-z0-9_]*\);.*/\1/p' "$map" | sort -u > "$tmp/listed"
# The functions the header declares (macros' helpers mpk__* included).
sed -n 's/^[a-z_].*[ *]\(mpk_[a-z0-9_]*\)(.*/\1/p; s/^__attribute__.*[ *]\(mpk_[a-z0-9_]*\)(.*/\1/p' "$hdr" |
	sort -u > "$tmp/declared"

bad=0
say() { [ $bad = 1 ] || echo "exports: FAIL"; bad=1; echo "    $*"; }
# each COMM_FLAG A B MESSAGE: MESSAGE (%s the symbol) for each line comm picks.
each() {
	for f in $(comm "$1" "$tmp/$2" "$tmp/$3"); do say "$(printf "$4" "$f" "$f")"; done
}
each -23 declared listed '%s is declared in include/mpkit.h but not listed in src/libmpkit.map: add "%s;" to the newest version node'
each -23 listed exported '%s is listed in src/libmpkit.map but the library does not define it (MPK_EXPORT missing, or a stale entry)'
each -13 listed exported '%s is exported but not listed in src/libmpkit.map'
each -13 declared exported '%s is exported but include/mpkit.h does not declare it'
unversioned=$(nm -D --defined-only "$lib" | awk '$3 ~ /^mpk/ && $3 !~ /@@?MPKIT_/ { print $3 }')
for f in $unversioned; do
	say "$f carries no MPKIT_ version (the library was not linked with src/libmpkit.map)"
done
[ $bad = 0 ] || exit 1
echo "exports: $(wc -l < "$tmp/exported") symbols, each listed in src/libmpkit.map and declared in include/mpkit.h"
