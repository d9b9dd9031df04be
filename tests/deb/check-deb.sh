#!/bin/sh
# Build the Debian packages from the release tarball (dpkg-buildpackage -us
# -uc -b, in BUILD/deb so nothing lands outside the tree), check them with
# lintian --pedantic (errors, warnings and pedantic tags fail; each override in debian/*.lintian-
# overrides says why), then install them and build programs against them:
# pkg-config and find_package(mpkit), shared and static, and run the
# installed mpkit command.
#
#   check-deb.sh BUILD           install by unpacking into BUILD/deb/root
#   MPKIT_DEB_INSTALL=system     apt-get install the .debs for real (CI,
#                                as root), and remove them afterwards
set -eu
build=${1:?usage: check-deb.sh BUILD_DIR}
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
version=$(sed -n 's/^#define MPK_VERSION_STRING "\(.*\)"/\1/p' include/mpkit.h)
out=$(mkdir -p "$build" && cd "$build" && pwd)/deb
rm -rf "$out"
mkdir -p "$out"

make --no-print-directory dist >/dev/null
tar -C "$out" -xzf "mpkit-$version.tar.gz"
(cd "$out/mpkit-$version" && dpkg-buildpackage -us -uc -b -j2) >"$out/build.log" 2>&1 ||
	{ tail -n 40 "$out/build.log"; echo "deb: FAIL, dpkg-buildpackage (log: $out/build.log)"; exit 1; }
debs=$(ls "$out"/libmpkit0_*.deb "$out"/libmpkit-dev_*.deb "$out"/mpkit_*.deb)
echo "deb: built $(echo $debs | wc -w) packages"
# debian/rules asks for the optional libraries (SODIUM=yes OPENSSL=yes):
# the command's package depends on them whatever the build machine had.
deps=$(dpkg-deb -f "$out"/mpkit_*.deb Depends)
for lib in libsodium libssl; do
	printf '%s\n' "$deps" | grep -q "$lib" ||
		{ echo "deb: FAIL, the mpkit package does not depend on $lib: $deps"; exit 1; }
done

if command -v lintian >/dev/null; then
	lintian --pedantic --fail-on error,warning,pedantic --info "$out"/mpkit_*.changes >"$out/lintian.log" 2>&1 ||
		{ cat "$out/lintian.log"; echo "deb: FAIL, lintian"; exit 1; }
	echo "deb: lintian finds no error or warning"
else
	echo "deb: lintian not found, not checked"
fi

# Where the packages' files are, and how a build finds them.
if [ "${MPKIT_DEB_INSTALL:-}" = system ]; then
	apt-get install -y -q --no-install-recommends $debs >"$out/install.log" 2>&1 ||
		{ cat "$out/install.log"; echo "deb: FAIL, apt-get install"; exit 1; }
	root=
	pc() { pkg-config "$@"; }
	cmake_prefix=
	trap 'apt-get remove -y -q libmpkit0 libmpkit-dev mpkit >/dev/null 2>&1 || true' EXIT
else
	root=$out/root
	for d in $debs; do dpkg-deb -x "$d" "$root"; done
	multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
	pc() { PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$root/usr/lib/$multiarch/pkgconfig pkg-config "$@"; }
	cmake_prefix=-DCMAKE_PREFIX_PATH=$root/usr
	LD_LIBRARY_PATH=$root/usr/lib/$multiarch
	export LD_LIBRARY_PATH
fi

cc tests/installed/t_installed.c -o "$out/user_pc" $(pc --cflags --libs mpkit)
"$out/user_pc"
cc tests/installed/t_installed.c -o "$out/user_pc_static" $(pc --cflags mpkit) \
	"$root$(pc --variable=libdir mpkit | sed "s|^$root||")/libmpkit.a" -pthread
"$out/user_pc_static"
echo "deb: a program built with pkg-config against the packages runs (shared and static)"

if command -v cmake >/dev/null; then
	cmake -S tests/cmake -B "$out/cmake" $cmake_prefix >"$out/cmake.log" 2>&1 &&
		cmake --build "$out/cmake" >>"$out/cmake.log" 2>&1 ||
		{ cat "$out/cmake.log"; echo "deb: FAIL, find_package(mpkit) against the packages"; exit 1; }
	"$out/cmake/user_shared"
	"$out/cmake/user_static"
	echo "deb: find_package(mpkit) against the packages builds and runs"
fi

"$root/usr/bin/mpkit" --version
# The helpers' directory as pkg-config and the man pages name it.
helperdir=$(pc --variable=helperdir mpkit)
case $helperdir in
*/usr/libexec/mpkit) [ -f "$root/usr/libexec/mpkit/libmpkit-malloc.so" ] ;;
*) false ;;
esac || { echo "deb: FAIL, pkg-config's helperdir is '$helperdir', not /usr/libexec/mpkit with the drop-in"; exit 1; }
zcat -f "$root"/usr/share/man/man1/mpkit-run.1* | grep -q '^\.B LD_PRELOAD=/usr/libexec/mpkit/libmpkit\\-malloc.so' ||
	{ echo "deb: FAIL, mpkit-run(1) does not name /usr/libexec/mpkit/libmpkit-malloc.so"; exit 1; }
# Every command from where the packages put it (issue 24, item 1): the
# benchmarks print their usage (mpkit itself prints none: "not found" would
# be its exit 1), mpkit watch finds its helper in /usr/libexec/mpkit and
# watches bash's shell_level, and the stripped benchmark reads the fast path.
for b in "" alloc threads --scale; do
	"$root/usr/bin/mpkit" bench $b --help | grep -q "^usage: mpkit bench" ||
		{ echo "deb: FAIL, mpkit bench $b --help does not reach its program in /usr/libexec/mpkit"; exit 1; }
done
out=$(env -u MPKIT_WATCH_LIB MPKIT_WATCH=shell_level "$root/usr/bin/mpkit" watch -- bash -c true 2>&1) &&
	printf '%s\n' "$out" | grep -q "write of shell_level+0" ||
	{ printf '%s\n' "$out"; echo "deb: FAIL, mpkit watch from the packages"; exit 1; }
"$root/usr/bin/mpkit" bench --smoke --quiet --json - 2>/dev/null | grep -q '"hw_fast_path": {"ok": true' ||
	{ echo "deb: FAIL, the packaged mpkit bench reads no fast path"; exit 1; }
out=$("$root/usr/bin/mpkit" run --stats -- bash -c 'echo ran' 2>&1) &&
	printf '%s\n' "$out" | grep -q '^ran$' && printf '%s\n' "$out" | grep -q '^libmpkit-malloc: bash\[' ||
	{ printf '%s\n' "$out"; echo "deb: FAIL, mpkit run from the packages"; exit 1; }
# mpkit guard from the packages: sqlite3 with libsqlite3 guarded prints
# what it prints unguarded, the helper found in /usr/libexec/mpkit (where
# sqlite3 is installed: tools/deps.sh test).
if command -v sqlite3 >/dev/null; then
	q='create table t(a, b); insert into t values (1, "x"), (2, "y"); select sum(a), group_concat(b) from t; select * from nosuch;'
	# (its last statement fails: exit 1, the same both ways)
	plain=$(printf '%s\n' "$q" | sqlite3 :memory: 2>&1 || echo "exit $?")
	out=$(printf '%s\n' "$q" | env -u MPKIT_GUARD_HELPER MPKIT_GUARD_VERBOSE=1 \
		"$root/usr/bin/mpkit" guard --lib libsqlite3.so.0 -- sqlite3 :memory: 2>&1 || echo "exit $?")
	printf '%s\n' "$out" | grep -q 'bytes of data in domain guard:libsqlite3.so.0' &&
		[ "$(printf '%s\n' "$out" | grep -v '^mpkit guard: ')" = "$plain" ] ||
		{ printf '%s\n---\n%s\n' "$plain" "$out"; echo "deb: FAIL, mpkit guard from the packages"; exit 1; }
	guarded=", guard"
fi
"$root/usr/bin/mpkit" info >/dev/null
"$root/usr/bin/mpkit" maps self >/dev/null
"$root/usr/bin/mpkit" scan "$root/usr/bin/mpkit" >/dev/null || [ $? = 1 ]
# (dh_compress compresses the larger documents, as Debian does.)
[ -f "$root/usr/share/doc/mpkit/guide.md.gz" ] || [ -f "$root/usr/share/doc/mpkit/guide.md" ] ||
	{ echo "deb: FAIL, no /usr/share/doc/mpkit/guide.md"; exit 1; }
echo "deb: every mpkit command runs from the packages (bench, watch, run${guarded:-}, info, maps, scan), the docs are in /usr/share/doc/mpkit"
