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
"$root/usr/bin/mpkit" bench --help >/dev/null
# The benchmarks print their usage (exit 2 for an unknown option is theirs:
# "not found" would be mpkit's exit 1 and its message).
for b in alloc threads; do
	"$root/usr/bin/mpkit" bench $b --help 2>&1 | grep -q "^usage: .*/libexec/mpkit/mpkit-bench-$b" ||
		{ echo "deb: FAIL, mpkit bench $b does not reach /usr/libexec/mpkit/mpkit-bench-$b"; exit 1; }
done
echo "deb: the mpkit command runs, and finds its benchmarks in /usr/libexec/mpkit"
