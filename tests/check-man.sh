#!/bin/sh
# The man pages: every exported function has one (a page or a `.so` link),
# every link points at a page whose NAME lists it, references to mpkit's
# pages resolve, mpkit(7) lists every section 3 page, and groff finds
# nothing to warn about.
lib=${1:?usage: check-man.sh LIBMPKIT_SO}
man=$(cd "$(dirname "$0")/../man" 2>/dev/null && pwd) || { echo "man: FAIL, no man/ directory"; exit 1; }
syms=$(nm -D --defined-only "$lib" | awk '$2 ~ /[TDBRVW]/ { print $3 }' | sed 's/@.*//' |
	grep '^mpk_' | grep -v '^mpk__' | sort -u)
[ -n "$syms" ] || { echo "man: FAIL, no mpk_* symbols in $lib"; exit 1; }

cd "$man" || exit 1
pages=$(ls man1/*.1 man3/*.3 man7/*.7 2>/dev/null)
problems=$(mktemp) || exit 1
trap 'rm -f "$problems"' EXIT
fail() { printf '    %s\n' "$*" >>"$problems"; }

# The target of a `.so` link page, or nothing for a page with text.
link_target() { sed -n '/^\.\\"/d; /^$/d; s/^\.so[ 	]\{1,\}\([^ 	]*\).*/\1/p; q' "$1"; }
# The names a page's NAME section lists, one a line.
names() {
	sed -n '/^\.SH "\{0,1\}NAME/,/^\.SH/{/^\.SH/d;p;}' "$1" | tr '\n' ' ' |
		sed 's/ \\-.*//; s/\\-/-/g; s/\\&//g; s/\\f[BIRP]//g' | tr ', ' '\n\n' | sed '/^$/d'
}

npages=0
for p in $pages; do
	npages=$((npages + 1))
	base=${p##*/}
	self=${base%.*}
	t=$(link_target "$p")
	if [ -n "$t" ]; then
		if [ ! -f "$t" ]; then
			fail "man/$p: .so target man/$t does not exist"
		elif [ -n "$(link_target "$t")" ]; then
			fail "man/$p: .so target man/$t is itself a link"
		elif ! names "$t" | grep -qx "$self"; then
			fail "man/$p: links to man/$t, whose NAME does not list $self"
		fi
	elif ! names "$p" | grep -qx "$self"; then
		fail "man/$p: its NAME section does not list $self"
	fi
done
[ "$npages" -gt 0 ] || fail "no pages in man/man1, man/man3, man/man7"

# Cross-references to mpkit's own pages (`.BR mpk_set (3)`) resolve.
for p in $pages; do
	grep '^\.' "$p" | grep -o '\(mpk[a-z_]*\|MPK_[A-Z_]*\) ([0-9])' | tr -d '()' | sort -u |
		while read -r n sec; do
			[ -f "man$sec/$n.$sec" ] || fail "man/$p: refers to $n($sec), which has no page"
		done
done

# Every exported function: man3/NAME.3.
for s in $syms; do
	[ -f "man3/$s.3" ] || fail "no page for $s (man/man3/$s.3)"
done

# mpkit(7) is the index: it names every section 3 page that has text.
if [ -f man7/mpkit.7 ]; then
	for p in man3/*.3; do
		[ -f "$p" ] && [ -z "$(link_target "$p")" ] || continue
		n=${p##*/}
		n=${n%.3}
		grep -q "^\.BR $n (3)" man7/mpkit.7 || fail "man/man7/mpkit.7: SEE ALSO does not list $n(3)"
	done
else
	fail "no man/man7/mpkit.7"
fi

# Lint: groff must print nothing.  `.so` resolves against man/.
if command -v groff >/dev/null 2>&1; then
	for p in $pages; do
		pre=
		case $(sed -n '1p' "$p") in
		"'\\\" "*t*) pre=-t ;;
		esac
		out=$(groff -man -ww -z $pre "$p" 2>&1)
		[ -z "$out" ] || printf '%s\n' "$out" | sed "s|^|man/$p: |" | while IFS= read -r l; do fail "$l"; done
	done
	lint=
else
	echo "man: skipped (groff not found)"
	lint=" (not linted)"
fi

# The pages with text as man-db and mandoc read them: `man --warnings -l`
# and `mandoc -T lint` (warnings and worse) print nothing, lexgrog finds
# the NAME line (whatis, apropos).  The `.so` links are checked above.
for tool in man mandoc lexgrog; do
	command -v $tool >/dev/null 2>&1 || { lint="$lint (no $tool)"; continue; }
	for p in $pages; do
		[ -z "$(link_target "$p")" ] || continue
		case $tool in
		man) out=$(MANWIDTH=80 man --warnings -l "$p" 2>&1 >/dev/null) ;;
		mandoc) out=$(mandoc -T lint -W warning "$p" 2>&1) ;;
		lexgrog) out=$(lexgrog "$p" 2>&1) && out= ;;
		esac
		[ -z "$out" ] || printf '%s\n' "$out" | sed "s|^|man/$p: $tool: |" |
			while IFS= read -r l; do fail "$l"; done
	done
done

if [ -s "$problems" ]; then
	echo "man: FAIL"
	cat "$problems"
	exit 1
fi
echo "man: $npages pages, every exported function documented$lint"
