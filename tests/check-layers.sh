#!/bin/sh
# The layers stay layered (docs/guide.md, Layout), checked by make check:
#  - internal.h is the core's: no file in src/ outside src/core/, nor in
#    tools/, bench/ or examples/, includes it (the layers above use core.h;
#    unit tests of internals in tests/ may);
#  - tools/, bench/ and examples/ include nothing from src/ but the public
#    header and src/shared/ (a name that is neither theirs nor known here
#    fails too, so that a new -I cannot open another door); bench/ may
#    include src/core/testing.h too, the core's calls that its scale and
#    broadcast benchmarks time;
#  - the Layout section of docs/guide.md names every source file in src/,
#    and names none that is not there;
#  - no function in bench/*.c is over 80 lines: a benchmark's parsing,
#    runs and table stay apart, each readable on one screen;
#  - tests/, bench/, tools/ and examples/ write no prototype of the
#    library's internal calls (mpk__*, mpk_os_*, mpk_arch_*) by hand: the
#    compiler never holds such a copy to the definition.  They include the
#    header the definition includes: src/core/testing.h (tests' and the
#    benchmarks' hooks), or for tests any internal header (core.h, os.h);
#  - calls point down, as the linker sees them: in the objects of BUILD
#    (the argument, build by default; make check passes its $(B)), every
#    mpk_ symbol an object of src/LAYER/ leaves undefined (nm -u) is
#    defined in the same layer or one below: arch, shared, core, then
#    heap, lockdown and features side by side (none calls another), then
#    malloc.  A layer below that must reach one above offers a hook that
#    the one above installs (src/core/hooks.c).
# Exit 0 when all hold, 1 with a line per violation.
# tests/check-layers-test.sh plants violations in a copy and checks that
# they are seen.
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
cd "$top" || exit 1
guide=docs/guide.md
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
: > "$tmp/bad"
bad() { echo "layers: $*" >> "$tmp/bad"; }

# An #include line's file name, angle or quoted: "q NAME" or "a NAME".
includes() {
	sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/q \1/p;
		s/^[[:space:]]*#[[:space:]]*include[[:space:]]*<\([^>]*\)>.*/a \1/p' "$1"
}

# src/ as it is: every file, and every source file (.c, .h).
find src -type f | LC_ALL=C sort > "$tmp/src"
grep -E '\.[ch]$' "$tmp/src" > "$tmp/sources"

# 1. internal.h outside the core.
for f in $(find src tools bench examples -type f -name '*.[ch]' | LC_ALL=C sort); do
	case $f in src/core/*) continue ;; esac
	includes "$f" | while read -r kind name; do
		case $name in
		internal.h | */internal.h) bad "$f includes $name: internal.h is the core's (src/core/); use core.h's services" ;;
		esac
	done
done

# 2. tools, benchmarks and examples: the public header and src/shared/ only.
# Where a quoted name may be found for them: their own directory, then the
# -I directories the Makefile gives them.
for f in $(find tools bench examples -type f -name '*.[ch]' | LC_ALL=C sort); do
	dir=$(dirname "$f")
	includes "$f" | while read -r kind name; do
		case $name in
		*src/*)
			case $f:$name in
			*:src/shared/* | *:*/src/shared/*) ;;
			bench/*:src/core/testing.h | bench/*:*/src/core/testing.h) ;;
			*) bad "$f includes $name: from src/ only mpkit.h and src/shared/ may be included" ;;
			esac
			continue ;;
		esac
		if [ "$kind" = q ] && [ -f "$dir/$name" ]; then
			# Its own file, unless the path climbs into src/.
			real=$(cd "$dir" && realpath --relative-to="$top" "$name")
			case $real in
			src/shared/*) ;;
			src/*) bad "$f includes $name ($real): from src/ only mpkit.h and src/shared/ may be included" ;;
			esac
			continue
		fi
		found=
		for d in include src/shared tests bench examples/sqlite-guard; do
			[ -f "$d/$name" ] && { found=$d; break; }
		done
		inside=$(grep -E "(^|/)$(printf '%s' "$name" | sed 's/[.]/[.]/g')\$" "$tmp/src" | grep -v '^src/shared/' | head -n 1)
		if [ -n "$found" ]; then
			continue
		elif [ -n "$inside" ]; then
			bad "$f includes $name, which is $inside: from src/ only mpkit.h and src/shared/ may be included"
		elif [ "$kind" = q ]; then
			bad "$f includes \"$name\", found neither beside it nor in include/, src/shared/, tests/, bench/"
		fi
	done
done

# 3. The Layout section names every source in src/, and only those.
awk '/^## / { on = ($0 ~ /^## Layout/) } on' "$guide" |
	tr -s ' \t' '\n\n' | sed 's/[,;:.)]*$//; s/^[(]*//' | grep -E '^src/' | LC_ALL=C sort -u > "$tmp/listed"
[ -s "$tmp/listed" ] || bad "$guide has no Layout section naming src/ files"
comm -23 "$tmp/sources" "$tmp/listed" | while read -r f; do
	bad "$f is not in $guide's Layout section: add a line saying what it holds"
done
grep -E '\.[ch]$' "$tmp/listed" | comm -23 - "$tmp/sources" | while read -r f; do
	bad "$guide's Layout section names $f, which is not there"
done

# 4. Functions in bench/ of at most 80 lines, from the line naming the
# function to its closing brace.  The house style makes a definition easy
# to see: a line at column 0 starting lowercase (the return type, or the
# name) with a "(" before any "=" or ";" and not ending in ";", confirmed by
# a "{" alone at column 0, and ended by a "}" alone at column 0.
awk -v max=80 '
FNR == 1 { state = 0 }
/^[a-z][^=;]*\(/ && !/;[ \t]*$/ {
	match($0, /[A-Za-z_][A-Za-z0-9_]*\(/)
	name = substr($0, RSTART, RLENGTH - 1); start = FNR; state = 1; next
}
state == 1 && /^\{/ { state = 2; next }
state == 2 && /^}[ \t]*$/ {
	n = FNR - start + 1
	if (n > max)
		printf "%s:%d: %s() is %d lines, over %d: split it by concern (parsing, runs, table)\n", FILENAME, start, name, n, max
	state = 0
}
' bench/*.c > "$tmp/long"
while read -r line; do
	bad "$line"
done < "$tmp/long"

# 5. No prototype of an internal call written by hand outside src/: a
# declaration (a type, then the name and its parenthesis) at the start of
# a line, not a call (return x(...), a = x(...)) nor a comment.
find tests bench tools examples -type f -name '*.[ch]' | LC_ALL=C sort |
	xargs grep -nE '^[[:space:]]*([A-Za-z_][A-Za-z0-9_]*[[:space:]*]+)+(mpk__|mpk_os_|mpk_arch_)[A-Za-z0-9_]*[[:space:]]*\(|^(mpk__|mpk_os_|mpk_arch_)[A-Za-z0-9_]*[[:space:]]*\(' |
	grep -vE '^[^:]*:[0-9]+:[[:space:]]*(return|else|case|do|goto)[[:space:]]' > "$tmp/protos"
while IFS= read -r line; do
	bad "${line%%:[!0-9]*}: an internal call's prototype written by hand, \"$(printf '%s' "${line#*:*:}" | sed 's/^[[:space:]]*//')\": include the header its definition includes (src/core/testing.h)"
done < "$tmp/protos"

# 6. Calls point down.  An object per source of src/ (the library's in
# obj/, the drop-in's in preload/; none for another architecture's).
rank() {
	case $1 in
	arch) echo 0 ;; shared) echo 1 ;; core) echo 2 ;;
	heap | lockdown | features) echo 3 ;; malloc) echo 4 ;; *) echo 9 ;;
	esac
}
: > "$tmp/objs"
[ -d "$build/obj/src" ] || bad "$build/obj/src: no objects there; build first (make all tests), or name the build directory"
[ -d "$build/obj/src" ] && for f in $(grep -E '\.c$' "$tmp/sources"); do
	o=${f%.c}.o
	if [ -f "$build/obj/$o" ]; then
		echo "$build/obj/$o $f" >> "$tmp/objs"
	elif [ -f "$build/preload/$o" ]; then
		echo "$build/preload/$o $f" >> "$tmp/objs"
	else
		case $f in src/arch/*) ;; *) bad "$f has no object in $build/obj/ or $build/preload/: build it first (make all tests), or name the build directory" ;; esac
	fi
done
# "symbol layer rank object" for each mpk_ symbol the objects define
# (globally) and leave undefined; nm -A names the object on each line.
: > "$tmp/defs"
: > "$tmp/undefs"
while read -r o f; do
	layer=${f#src/}
	layer=${layer%%/*}
	echo "$o ${f%.c}.o $layer $(rank "$layer")"
done < "$tmp/objs" > "$tmp/layers"
if [ -s "$tmp/objs" ]; then
	pick='NR == FNR { obj[$1] = $2; lay[$1] = $3; rk[$1] = $4; next }
	{ o = substr($0, 1, index($0, ":") - 1) }
	$NF ~ /^mpk_/ && (o in obj) { print $NF, lay[o], rk[o], obj[o] }'
	# shellcheck disable=SC2046
	${NM:-nm} -A -g --defined-only $(cut -d' ' -f1 "$tmp/objs") | awk "$pick" "$tmp/layers" - > "$tmp/defs"
	# shellcheck disable=SC2046
	${NM:-nm} -A -u $(cut -d' ' -f1 "$tmp/objs") | awk "$pick" "$tmp/layers" - > "$tmp/undefs"
fi
awk 'NR == FNR { def[$1] = def[$1] " " $2 ":" $3 ":" $4; next }
{
	sym = $1; l = $2; r = $3; o = $4
	if (!(sym in def)) {
		printf "%s (%s) calls %s, which no object of src/ defines\n", o, l, sym
		next
	}
	n = split(def[sym], d, " "); ok = 0; where = ""
	for (i = 1; i <= n; i++) {
		split(d[i], p, ":")
		if (p[1] == l || p[2] < r)
			ok = 1
		where = where (where ? ", " : "") p[1] " (" p[3] ")"
	}
	if (!ok)
		printf "%s (%s) calls %s, defined in %s: a layer calls its own and those below; one below that must reach up offers a hook (src/core/hooks.c)\n", o, l, sym, where
}' "$tmp/defs" "$tmp/undefs" | LC_ALL=C sort -u > "$tmp/calls"
while IFS= read -r line; do
	bad "$line"
done < "$tmp/calls"

if [ -s "$tmp/bad" ]; then
	cat "$tmp/bad"
	echo "layers: FAIL, $(wc -l < "$tmp/bad") violation(s)"
	exit 1
fi
echo "layers: $(wc -l < "$tmp/sources") sources in src/, each in the guide's layout; internal.h stays in the core; tools, bench and examples see mpkit.h and src/shared/ only (bench: and src/core/testing.h); no function in bench/ over 80 lines; no internal prototype written outside src/; $(wc -l < "$tmp/undefs") references to mpk_ symbols in $(wc -l < "$tmp/objs") objects of src/, each to its own layer or one below"
