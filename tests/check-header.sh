#!/bin/sh
# What include/mpkit.h lets the compiler check (its attributes), proved by
# compiling: the header builds clean as C11 -pedantic, GNU C and C++; an
# unchecked mpk_set(), mpk_enter(), mpk_domain_create(), mpk_lockdown()
# fails under -Werror=unused-result; NULL to mpk_set() under
# -Werror=nonnull; an overflow of a secret and of a heap block under
# -Werror (GCC); in C++ every exported function is noexcept; and every
# whole program in the man pages (mpkit(7)'s and section 3's) compiles
# with -Wall -Wextra -Werror.  Compiles only; clang and c++ are tried
# when they are there.
#   check-header.sh [CC]
cc=${1:-cc}
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
bad=0
say() { [ $bad = 1 ] || echo "header: FAIL"; bad=1; echo "    $*"; }
inc="-I$top/include"

# ok COMPILER FLAGS... < source: compiles without a diagnostic.
ok() {
	c=$1; shift
	cat > "$tmp/ok.c"
	"$c" $inc "$@" -c "$tmp/ok.c" -o "$tmp/ok.o" 2>"$tmp/err" && [ ! -s "$tmp/err" ]
}
# refused WHAT PATTERN COMPILER FLAGS... < source: fails, naming PATTERN.
refused() {
	what=$1 pat=$2 c=$3; shift 3
	cat > "$tmp/bad.c"
	if "$c" $inc "$@" -c "$tmp/bad.c" -o "$tmp/bad.o" 2>"$tmp/err"; then
		say "$c accepts $what"
	elif ! grep -q -- "$pat" "$tmp/err"; then
		say "$c refuses $what, but not for $pat:"; sed 's/^/        /' "$tmp/err"
	fi
}

compilers=$cc
command -v clang >/dev/null 2>&1 && [ "$cc" != clang ] && compilers="$compilers clang"

use='#include <string.h>
#include <mpkit.h>
int use(mpk_domain *d);
int use(mpk_domain *d)
{
	unsigned char *k = mpk_secret_allocarray(d, 4, 8);
	if (!k || mpk_set(d, MPK_RW))
		return -1;
	memset(k, 0, 32);
	MPK_WITH(d, MPK_READ) {
		k[31]++;
	}
	return mpk_secret_free(k);
}'
for c in $compilers; do
	for std in "-std=c11 -pedantic" "-std=gnu11"; do
		echo "$use" >"$tmp/src"
		ok "$c" $std -O2 -Wall -Wextra -Werror <"$tmp/src" ||
			{ say "$c $std: the header does not compile clean:"; sed 's/^/        /' "$tmp/err"; }
	done
	for call in "mpk_set(d, MPK_RW)" "mpk_enter(d, MPK_RW)" "mpk_domain_create(\"x\", MPK_RW, 0)" \
		    "mpk_lockdown(0)" "mpk_secret_alloc(d, 32)"; do
		printf '#include <mpkit.h>\nvoid f(mpk_domain *d);\nvoid f(mpk_domain *d) { (void)d; %s; }\n' "$call" >"$tmp/src"
		refused "an unchecked $call" "unused-result" "$c" -Werror=unused-result <"$tmp/src"
	done
	printf '#include <mpkit.h>\nint f(void);\nint f(void) { return mpk_set(NULL, MPK_RW); }\n' >"$tmp/src"
	refused "NULL for mpk_set()'s domain" "nonnull" "$c" -Werror=nonnull <"$tmp/src"
done
cxx=
command -v c++ >/dev/null 2>&1 && cxx=c++
if [ -n "$cxx" ]; then
	printf '%s\n' "$use" | sed 's/unsigned char \*k = /unsigned char *k = (unsigned char *)/' > "$tmp/use.cc"
	$cxx $inc -std=c++11 -pedantic -O2 -Wall -Wextra -Werror -x c++ -c "$tmp/use.cc" -o "$tmp/use.o" 2>"$tmp/err" ||
		{ say "c++ -std=c++11 -pedantic: the header does not compile clean:"; sed 's/^/        /' "$tmp/err"; }
	# throw() before C++11 (whose -pedantic refuses the enums' last commas).
	$cxx $inc -std=c++98 -O2 -Wall -Wextra -Werror -x c++ -c "$tmp/use.cc" -o "$tmp/use.o" 2>"$tmp/err" ||
		{ say "c++ -std=c++98: the header does not compile clean:"; sed 's/^/        /' "$tmp/err"; }
	# Every exported function is noexcept (C++17: part of its type, so a
	# pointer to it converts to a noexcept one; the ellipsis takes the rest).
	{
		echo '#include <mpkit.h>'
		echo 'template <class R, class... A> constexpr bool nothrow_fn(R (*)(A...) noexcept) { return true; }'
		echo 'constexpr bool nothrow_fn(...) { return false; }'
		echo 'int mpkit_test_plain(int);'
		echo 'static_assert(!nothrow_fn(&mpkit_test_plain), "the noexcept test cannot tell");'
		sed -n '/global:/,/local:/s/^[[:space:]]*\(mpk_[a-z0-9_]*\);.*/\1/p' "$top/src/libmpkit.map" |
			sed 's/.*/static_assert(nothrow_fn(\&&), "& is not noexcept");/'
	} > "$tmp/nothrow.cc"
	nfn=$(grep -c 'is not noexcept' "$tmp/nothrow.cc")
	[ "$nfn" -gt 50 ] || say "src/libmpkit.map: only $nfn functions read"
	$cxx $inc -std=c++17 -pedantic -Wall -Wextra -Werror -c "$tmp/nothrow.cc" -o "$tmp/nothrow.o" 2>"$tmp/err" ||
		{ say "c++ -std=c++17: not every exported function is noexcept:"; grep 'error' "$tmp/err" | sed 's/^/        /'; }
fi

# Overflows the size attributes let GCC see (clang warns on neither).
if "$cc" -dM -E - </dev/null | grep -q '__GNUC__' && ! "$cc" -dM -E - </dev/null | grep -q '__clang__'; then
	printf '#include <string.h>\n#include <mpkit.h>\nint f(mpk_domain *d);\nint f(mpk_domain *d) { unsigned char *k = mpk_secret_alloc(d, 32); if (!k) return 0; memset(k, 1, 64); return mpk_secret_free(k); }\n' >"$tmp/src"
	refused "memset() of 64 bytes into a 32-byte secret" "bounds\|overflow" "$cc" -O2 -Wall -Werror <"$tmp/src"
	printf '#include <mpkit.h>\nint f(mpk_heap *h);\nint f(mpk_heap *h) { char *b = mpk_heap_malloc(h, 8); if (!b) return 0; b[8] = 1; return mpk_heap_free(h, b); }\n' >"$tmp/src"
	refused "a store one past an 8-byte heap block" "bounds\|overflow" "$cc" -O2 -Wall -Werror <"$tmp/src"
fi

# The man pages' whole programs (those with a main()), as printed.
n=0
for p in "$top"/man/man3/*.3 "$top"/man/man7/*.7; do
	awk '/^\.EX/ { on = 1; k++; next } /^\.EE/ { on = 0; next } on { print > (dir "/ex" k ".roff") }' \
		dir="$tmp" k=0 "$p" 2>/dev/null
	for ex in "$tmp"/ex*.roff; do
		[ -f "$ex" ] || continue
		if grep -q 'main(void)' "$ex"; then
			# A hidden line '.\" cflags: -Wno-X (why)' adds a flag.
			extra=$(sed -n 's/^\.\\" cflags: \(-[^ ]*\).*/\1/p' "$ex")
			# ... where this compiler knows it (clang has no -Wuse-after-free).
			[ -z "$extra" ] || "$cc" -Werror $extra -x c -c /dev/null -o /dev/null 2>/dev/null || extra=
			sed -e '/^\.\\"/d' -e 's/\\-/-/g' -e 's/\\e/\\/g' -e 's/\\&//g' "$ex" > "$tmp/prog.c"
			n=$((n + 1))
			"$cc" $inc -std=gnu11 -O2 -Wall -Wextra -Werror $extra -D_FORTIFY_SOURCE=2 -c "$tmp/prog.c" \
				-o "$tmp/prog.o" 2>"$tmp/err" ||
				{ say "${p#$top/}: its example does not compile with -Wall -Wextra -Werror:"; sed 's/^/        /' "$tmp/err"; }
		fi
		rm -f "$ex"
	done
done
[ $bad = 0 ] || exit 1
echo "header: compiles clean (C11, GNU C$( [ -n "$cxx" ] && echo ", C++98/11, every function noexcept")); unchecked calls, NULL and overflows refused ($compilers); $n man page programs compile with -Werror"
