#!/bin/sh
# The shared library exports the public API and nothing else.
lib=${1:?usage: check-exports.sh LIBMPKIT_SO}
syms=$(nm -D --defined-only "$lib" | awk '$2 ~ /[TDBRVW]/ && $3 != "MPKIT_0" { print $3 }' | sed 's/@.*//')
bad=$(printf '%s\n' "$syms" | grep -v '^mpk_' || true)
if [ -n "$bad" ]; then
	echo "exports: FAIL, symbols outside mpk_*:"; printf '    %s\n' $bad
	exit 1
fi
# Every function the header declares must be exported, too.
missing=$(sed -n 's/^[a-z].*[ *]\(mpk_[a-z_]*\)(.*/\1/p' include/mpkit.h | sort -u |
	while read -r f; do printf '%s\n' "$syms" | grep -qx "$f" || echo "$f"; done)
if [ -n "$missing" ]; then
	echo "exports: FAIL, declared but not exported:"; printf '    %s\n' $missing
	exit 1
fi
echo "exports: $(printf '%s\n' "$syms" | wc -l) symbols, all mpk_*"
