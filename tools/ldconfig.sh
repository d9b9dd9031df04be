#!/bin/sh
# ldconfig.sh - after `make install` or `make uninstall` to a live system
# (no DESTDIR: a staged or packaged install leaves this to the package
# manager), make the dynamic linker see what changed in LIBDIR, as
# libraries' installs do: run ldconfig when LIBDIR is a directory it
# looks at, else say how a program finds libmpkit.so.0.
#
# Usage: tools/ldconfig.sh install|uninstall LIBDIR SONAME
#
# The directories ldconfig looks at are those `ldconfig -v -N -X` lists
# (/etc/ld.so.conf and its includes, and the trusted ones), which reads
# and writes nothing; ldconfig is the one on PATH, else /sbin's.  Exit
# status 0 whatever happens: the files are installed either way, and what
# is left to do is printed.
set -u
[ $# = 3 ] || { echo "usage: $0 install|uninstall LIBDIR SONAME" >&2; exit 2; }
what=$1 libdir=$2 soname=$3

ldconfig=$(command -v ldconfig 2>/dev/null)
for p in /sbin/ldconfig /usr/sbin/ldconfig; do
	[ -n "$ldconfig" ] || { [ -x "$p" ] && ldconfig=$p; }
done
if [ -z "$ldconfig" ]; then
	[ "$what" = uninstall ] ||
		echo "mpkit: no ldconfig found: programs linked to $soname need LD_LIBRARY_PATH=$libdir or -Wl,-rpath,$libdir"
	exit 0
fi

want=$(realpath -m "$libdir")
seen=
for d in $("$ldconfig" -v -N -X 2>/dev/null | sed -n 's|^\(/[^:]*\):.*|\1|p'); do
	[ "$(realpath -m "$d")" = "$want" ] && seen=yes && break
done

if [ -n "$seen" ]; then
	echo "$ldconfig"
	"$ldconfig" && exit 0
	echo "mpkit: $ldconfig failed: run it as root, so that programs find $soname in $libdir"
elif [ "$what" = install ]; then
	# The installed mpkit command finds the library itself (its RUNPATH).
	cat <<EOF
mpkit: $libdir is not a directory the dynamic linker searches (ldconfig -v lists it
  nowhere), so ldconfig was not run.  A program linked to $soname finds it with
  -Wl,-rpath,$libdir at link time, or LD_LIBRARY_PATH=$libdir, or, as root:
  echo $libdir > /etc/ld.so.conf.d/mpkit.conf && ldconfig
EOF
fi
exit 0
