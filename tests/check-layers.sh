#!/bin/sh
# The layers stay layered (docs/guide.md, Layout), checked by make check:
#  - internal.h is the core's: no file in src/ outside src/core/, nor in
#    tools/, bench/ or examples/, includes it (the layers above use core.h;
#    unit tests of internals in tests/ may);
#  - tools/, bench/ and examples/ include nothing from src/ but the public
#    header and src/shared/ (a name that is neither theirs nor known here
#    fails too, so that a new -I cannot open another door);
#  - the Layout section of docs/guide.md names every source file in src/,
#    and names none that is not there;
#  - no function in bench/*.c is over 80 lines: a benchmark's parsing,
#    runs and table stay apart, each readable on one screen.
# Exit 0 when all hold, 1 with a line per violation.
top=$(cd "$(dirname "$0")/.." && pwd)
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
			case $name in
			src/shared/* | */src/shared/*) ;;
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

if [ -s "$tmp/bad" ]; then
	cat "$tmp/bad"
	echo "layers: FAIL, $(wc -l < "$tmp/bad") violation(s)"
	exit 1
fi
echo "layers: $(wc -l < "$tmp/sources") sources in src/, each in the guide's layout; internal.h stays in the core; tools, bench and examples see mpkit.h and src/shared/ only; no function in bench/ over 80 lines"
