#!/bin/sh
# The layer check's own test, run by make check after the check: in a copy
# of the tree and of BUILD's objects of src/ (the argument, build by
# default), the copy as it is passes; with violations planted, the check
# fails naming each of them and nothing else: a call up (core to heap), a
# call sideways (lockdown to heap), a prototype of an internal call written
# by hand in tests/, tests/kit/ and bench/, tools/ including
# src/core/testing.h; a call down (features to core), calls of an internal
# function and a comment naming one are not violations.  Exit 0 when all
# hold, 1 with what did not.
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
cd "$top" || exit 1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
copy=$tmp/tree
objs=$tmp/build
mkdir -p "$copy/docs" "$objs/obj" "$objs/preload" || exit 1
cp -R src tests bench tools examples include "$copy/" && cp docs/guide.md "$copy/docs/" || exit 1
[ -d "$build/obj/src" ] && cp -R "$build/obj/src" "$objs/obj/" || {
	echo "check-layers-test: FAIL, no objects in $build/obj/src: build first (make all tests)"
	exit 1
}
[ ! -d "$build/preload/src" ] || cp -R "$build/preload/src" "$objs/preload/" || exit 1

run() {
	"$copy/tests/check-layers.sh" "$objs" > "$tmp/out" 2>&1
}
fail() {
	echo "check-layers-test: FAIL, $*"
	sed 's/^/  | /' "$tmp/out"
	exit 1
}
# A source in src/LAYER/ calling sym, compiled into the objects and named
# in the copy's Layout (which the check also holds it to).
plant_call() {
	mkdir -p "$copy/src/$1" "$objs/obj/src/$1"
	printf 'void %s(void);\nvoid mpk__plant_%s(void);\nvoid mpk__plant_%s(void)\n{\n\t%s();\n}\n' \
		"$2" "$1" "$1" "$2" > "$copy/src/$1/plant.c"
	${CC:-cc} -c -o "$objs/obj/src/$1/plant.o" "$copy/src/$1/plant.c" || exit 1
	sed -i "/^## Layout/a src/$1/plant.c planted" "$copy/docs/guide.md"
}

run || fail "the tree as it is: the check failed"

# Every plant at once (the check takes seconds on a loaded machine).
plant_call core mpk__meta_ranges_each     # up
plant_call lockdown mpk__meta_ranges_each # sideways
plant_call features mpk__core_lock        # down: no violation
cat > "$copy/tests/t_plant.c" <<'EOF'
#include <stddef.h>
size_t mpk__window_kept(void);
/* mpk__window_kept() counts
   mpk__window_kept() bytes */
static size_t f(void)
{
	size_t k = mpk__window_kept();
	if (k)
		return mpk__window_kept();
	return k + mpk__window_kept();
}
EOF
printf '#include <stdint.h>\nint mpk__broadcast(uint32_t clear, uint32_t set);\n' > "$copy/bench/plant.h"
printf 'int mpk_os_vma_pkey(const void *addr); /* os.c */\n' > "$copy/tests/kit/plant.c"
printf '#include "../src/core/testing.h"\n' > "$copy/tools/plant.c"
want='src/core/plant.o (core) calls mpk__meta_ranges_each, defined in heap (src/heap/meta.o)
src/lockdown/plant.o (lockdown) calls mpk__meta_ranges_each, defined in heap (src/heap/meta.o)
tests/t_plant.c:2: an internal call'"'"'s prototype written by hand, "size_t mpk__window_kept(void);"
bench/plant.h:2: an internal call'"'"'s prototype written by hand, "int mpk__broadcast(uint32_t clear, uint32_t set);"
tests/kit/plant.c:1: an internal call'"'"'s prototype written by hand, "int mpk_os_vma_pkey
tools/plant.c includes ../src/core/testing.h'
run && fail "the check passed with every plant in"
n=$(printf '%s\n' "$want" | wc -l)
grep -q "FAIL, $n violation" "$tmp/out" || fail "want $n violations, one per plant"
printf '%s\n' "$want" | while IFS= read -r w; do
	grep -qF -- "$w" "$tmp/out" || { echo "missing: $w" >> "$tmp/out"; exit 1; }
done || fail "a plant not named"
echo "check-layers-test: the check passes the tree and names each of $n plants (a call up, a call sideways, hand-written internal prototypes in tests/, tests/kit/ and bench/, tools/ including testing.h), and no call down"
