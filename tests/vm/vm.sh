#!/usr/bin/env bash
# vm.sh - run mpkit's tests inside a QEMU VM whose CPU has protection keys.
#
# Usage: tests/vm/vm.sh BUILD_DIR TEST_DIR
#
# The host CPU may lack PKU, so the hardware backend is tested in a guest
# with QEMU's "-cpu max", which emulates PKU under TCG.  Steps:
#   1. find or fetch qemu-system-x86_64, a static busybox and a Debian kernel
#      (all cached under BUILD_DIR/vm/, so a second run downloads nothing);
#   2. pack busybox, TEST_DIR, tests/run-tests.sh, BUILD_DIR/mpkit (if built)
#      and every shared library they need into an initramfs;
#   3. boot it (twice more at most if the kernel dies before /init runs);
#      /init runs "run-tests.sh vm /tests" with MPKIT_BACKEND=hw and
#      powers off; the serial console is tee'd to BUILD_DIR/vm/console.log;
#   4. re-print the test results, ending with the runner's summary line
#      "vm: N passed, M failed[, K skipped]".
#
# Exit status: 0 all tests passed; 1 a test failed, or the VM crashed or
# timed out (counted as one extra failure); 77 the VM could not be set up
# (prints "vm: skipped (REASON)" and how to install what is missing);
# 2 usage error.
#
# Environment:
#   MPKIT_VM_TIMEOUT       overall limit for the VM run, seconds (default 1200)
#   MPKIT_VM_TEST_TIMEOUT  per-test limit inside the VM, seconds (default 180:
#                          t_guard_real runs real programs under TCG)
#   MPKIT_VM_KERNEL        use this kernel image instead of fetching Debian's
#   MPKIT_VM_KERNEL_PKG    the Debian kernel package to fetch (default: what
#                          linux-image-amd64 depends on, 6.1 on bookworm); a
#                          meta-package such as linux-image-6.12-amd64 works
#   MPKIT_VM_ACCEL         force "kvm" or "tcg" (default: see choose_accel)
#   MPKIT_TEST_FILTER      passed on to run-tests.sh inside the VM
#   MPKIT_VM_ENV           more NAME=VALUE words exported inside the VM, e.g.
#                          "MPKIT_MODEL_STEPS=100000 MPKIT_MODEL_SEED=7"
#   MPKIT_VM_APPEND        more kernel command-line words, e.g.
#                          "secretmem.enable=1" (memfd_secret on 5.14-6.4)
#   MPKIT_VM_PROGS         the host's programs copied in, with what they
#                          load, where the host has them (default
#                          "sqlite3 xmllint git openssl": t_guard_real runs
#                          them guarded on hw; "" for none)

set -eu -o pipefail

usage() {
    echo "usage: $0 BUILD_DIR TEST_DIR" >&2
    exit 2
}
[ $# -eq 2 ] || usage
[ -d "$2" ] || { echo "$0: no such directory: $2" >&2; exit 2; }

build_dir=$(mkdir -p "$1" && cd "$1" && pwd)
test_dir=$(cd "$2" && pwd)
script_dir=$(cd "$(dirname "$0")" && pwd)
runner=$script_dir/../run-tests.sh
vm_dir=$build_dir/vm
console_log=$vm_dir/console.log
vm_timeout=${MPKIT_VM_TIMEOUT:-1200}
test_timeout=${MPKIT_VM_TEST_TIMEOUT:-180}
mkdir -p "$vm_dir"

log() { echo "vm.sh: $*" >&2; }

# skip REASON [INSTALL_HINT]: the VM cannot be set up; not a test failure.
skip() {
    log "missing: $1"
    [ $# -lt 2 ] || log "to install it: $2"
    echo "vm: skipped ($1)"
    exit 77
}

is_root() { [ "$(id -u)" -eq 0 ]; }
have() { command -v "$1" >/dev/null 2>&1; }

# apt_update_once: refresh the package lists (needed on a fresh machine
# before apt-cache/apt-get know any package), at most once a run.
apt_updated=
apt_update_once() {
    [ -z "$apt_updated" ] && is_root && have apt-get || return 1
    apt_updated=1
    log "running apt-get update"
    apt-get update -q >&2
}

# apt_download PKG DIR: fetch PKG's .deb into DIR (no root needed) and print
# its path.  As root, apt normally drops to the _apt user for downloads and
# warns when _apt cannot write to DIR; Sandbox::User=root avoids that.
apt_download() {
    local pkg=$1 dir=$2 opts=()
    have apt-get || return 1
    is_root && opts=(-o APT::Sandbox::User=root)
    rm -f "$dir/${pkg}_"*.deb
    (cd "$dir" && apt-get download -q "${opts[@]}" "$pkg" >&2) ||
        { apt_update_once && (cd "$dir" && apt-get download -q "${opts[@]}" "$pkg" >&2); } ||
        return 1
    ls "$dir/${pkg}_"*.deb
}

# is_static FILE: true if FILE is an ELF executable without a dynamic loader.
is_static() {
    local out
    out=$(LC_ALL=C ldd "$1" 2>&1) || true
    case $out in
        *"not a dynamic executable"* | *"statically linked"*) return 0 ;;
        *) return 1 ;;
    esac
}

# ---------------------------------------------------------------- tools

have ldd || skip "ldd (to collect the tests' shared libraries)" "apt-get install libc-bin"
have gzip || skip "gzip" "apt-get install gzip"
have timeout || skip "timeout" "apt-get install coreutils"

find_qemu() {
    # As root, tools/deps.sh installs the vm group (the one package list).
    if ! have qemu-system-x86_64 && is_root; then
        log "installing the VM suite's packages (tools/deps.sh vm)"
        "$script_dir/../../tools/deps.sh" vm >&2 || true
    fi
    have qemu-system-x86_64 ||
        skip "qemu-system-x86_64" "apt-get install qemu-system-x86"
    qemu=$(command -v qemu-system-x86_64)
}

# The guest has no libc of its own, so busybox must be statically linked.
# The "busybox" package ships a dynamic /bin/busybox; rather than replacing
# it system-wide (busybox-static conflicts with it), unpack busybox-static
# into the cache.
find_busybox() {
    busybox=$vm_dir/busybox
    [ -x "$busybox" ] && return 0
    local b
    for b in /bin/busybox /usr/bin/busybox; do
        if [ -x "$b" ] && is_static "$b"; then
            cp "$b" "$busybox"
            return 0
        fi
    done
    local dl=$vm_dir/dl deb
    mkdir -p "$dl"
    if deb=$(apt_download busybox-static "$dl") &&
        dpkg-deb -x "$deb" "$dl/busybox-static" &&
        is_static "$dl/busybox-static/bin/busybox"; then
        cp "$dl/busybox-static/bin/busybox" "$busybox"
        rm -rf "$deb" "$dl/busybox-static"
        return 0
    fi
    skip "static busybox" "apt-get install busybox-static"
}

# Debian's generic kernel has everything a plain initramfs boot needs built
# in (serial console, devtmpfs, gzip initrd) and PKU support; only its boot/
# directory is unpacked, not the ~400 MB of modules.
find_kernel() {
    if [ -n "${MPKIT_VM_KERNEL:-}" ]; then
        kernel=$MPKIT_VM_KERNEL
        [ -r "$kernel" ] || skip "kernel $kernel (from MPKIT_VM_KERNEL)"
        return 0
    fi
    local kdir=$vm_dir/kernel${MPKIT_VM_KERNEL_PKG:+-$MPKIT_VM_KERNEL_PKG}
    kernel=$(latest_vmlinuz "$kdir")
    if [ -z "$kernel" ]; then
        local hint="apt-get update (and apt, dpkg), or set MPKIT_VM_KERNEL=/path/to/bzImage"
        if ! have apt-cache || ! have dpkg-deb; then
            skip "apt-cache/dpkg-deb to fetch a Debian kernel" "$hint"
        fi
        local pkg
        pkg=$(kernel_package)
        [ -n "$pkg" ] || { apt_update_once || true; pkg=$(kernel_package); }
        [ -n "$pkg" ] || skip "kernel package (apt-cache depends ${MPKIT_VM_KERNEL_PKG:-linux-image-amd64} found none)" "$hint"
        log "fetching kernel package $pkg"
        local dl=$vm_dir/dl deb
        mkdir -p "$dl"
        deb=$(apt_download "$pkg" "$dl") || skip "kernel package $pkg (apt-get download failed)" "$hint"
        # Unpack to a temporary directory first so that an interrupted run
        # cannot leave a half-written cache behind.
        rm -rf "$kdir.tmp"
        mkdir -p "$kdir.tmp"
        dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$kdir.tmp" ./boot ||
            skip "kernel image (unpacking $deb failed)" "$hint"
        rm -rf "$kdir"
        mv "$kdir.tmp" "$kdir"
        rm -f "$deb"
        kernel=$(latest_vmlinuz "$kdir")
        [ -n "$kernel" ] || skip "boot/vmlinuz-* in $pkg"
    fi
    local config=${kernel%/*}/config-${kernel##*/vmlinuz-}
    if [ ! -r "$config" ]; then
        log "warning: no kernel config next to $kernel; cannot check PKU support"
    elif ! grep -qx 'CONFIG_X86_INTEL_MEMORY_PROTECTION_KEYS=y' "$config"; then
        log "warning: $kernel lacks CONFIG_X86_INTEL_MEMORY_PROTECTION_KEYS=y; hardware PKU tests will not run"
    fi
}

# latest_vmlinuz DIR: the newest DIR/boot/vmlinuz-*, if any.
latest_vmlinuz() {
    local k=("$1"/boot/vmlinuz-*)
    [ -e "${k[0]}" ] || return 0
    printf '%s\n' "${k[@]}" | sort -V | tail -n 1
}

# kernel_package: the versioned package that linux-image-amd64 (or the
# meta-package in MPKIT_VM_KERNEL_PKG) depends on, e.g.
# linux-image-6.1.0-57-amd64; a versioned MPKIT_VM_KERNEL_PKG is itself.
kernel_package() {
    local want=${MPKIT_VM_KERNEL_PKG:-linux-image-amd64} dep
    dep=$(apt-cache depends "$want" 2>/dev/null |
        awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }' || true)
    if [ -n "$dep" ]; then
        echo "$dep"
    elif [ -n "${MPKIT_VM_KERNEL_PKG:-}" ] && apt-cache show "$want" >/dev/null 2>&1; then
        echo "$want"
    fi
}

# KVM passes the host's CPU features through, so on a host without PKU the
# guest would lack it too: only TCG emulates PKU there.  Use KVM only when
# it is usable and the host itself has PKU.
choose_accel() {
    case ${MPKIT_VM_ACCEL:-} in
        kvm | tcg) accel=$MPKIT_VM_ACCEL; return 0 ;;
        '') ;;
        *) log "warning: ignoring MPKIT_VM_ACCEL=$MPKIT_VM_ACCEL (want kvm or tcg)" ;;
    esac
    accel=tcg
    if [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qw pku /proc/cpuinfo; then
        accel=kvm
    fi
}

find_qemu
find_busybox
find_kernel
choose_accel

# ---------------------------------------------------------------- initramfs

root=$vm_dir/initramfs
initrd=$vm_dir/initramfs.cpio.gz
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,usr/local/lib,proc,sys,dev,tmp,tests}

cp "$busybox" "$root/bin/busybox"
"$busybox" --list-full | while read -r applet; do
    [ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
done

cp "$runner" "$root/run-tests.sh"
chmod 755 "$root/run-tests.sh"
# Everything in TEST_DIR (tests and their helper files), minus build litter.
tar -C "$test_dir" --exclude='*.o' --exclude='*.d' -cf - . | tar -C "$root/tests" -xf -

# ELF files whose libraries must come along: executables and shared objects.
elfs=()
while IFS= read -r -d '' f; do
    case $f in
        *.so | *.so.*) elfs+=("$f") ;;
        *) if [ -x "$f" ]; then elfs+=("$f"); fi ;;
    esac
done < <(find "$test_dir" -type f ! -name '*.o' -print0)
if [ -x "$build_dir/mpkit" ]; then
    cp "$build_dir/mpkit" "$root/usr/local/bin/mpkit"
    elfs+=("$build_dir/mpkit")
fi
# `mpkit bench --scale --smoke` (t_cli_bench_scale), `mpkit bench vault
# --smoke` (t_cli_bench_vault) and `mpkit bench guard --smoke`
# (t_cli_bench_guard, with sqlite3 below) find theirs next to mpkit, and
# in a build tree mpkit finds its guard helper there too.  Not `mpkit
# bench malloc`: its probe preloads into a program, and the image's
# commands are a static busybox.
for b in mpkit-bench-scale mpkit-bench-vault mpkit-bench-guard libmpkit-guard.so; do
    if [ -x "$build_dir/$b" ]; then
        cp "$build_dir/$b" "$root/usr/local/bin/$b"
        elfs+=("$build_dir/$b")
    fi
done

# Debian's programs that t_guard_real runs, so that it runs them on hw
# too; python3 stays out (its standard library is tens of MB).
for p in ${MPKIT_VM_PROGS-sqlite3 xmllint git openssl}; do
    path=$(command -v "$p" 2>/dev/null) || continue
    case $path in /*) ;; *) continue ;; esac
    mkdir -p "$root${path%/*}"
    cp -L "$path" "$root$path"
    elfs+=("$path")
    # git runs its subcommands (gc's repack, pack-objects) as "git" from
    # its exec path.
    if [ "$p" = git ] && gx=$(git --exec-path 2>/dev/null) && [ -n "$gx" ]; then
        mkdir -p "$root$gx"
        ln -sf "$path" "$root$gx/git"
    fi
done

# Collect every library (and the dynamic loader) they need.  ldd runs on the
# originals so that $ORIGIN rpaths resolve.
declare -A libs=()
for f in "${elfs[@]}"; do
    while read -r line; do
        case $line in
            *"=> not found"*) log "warning: ${f##*/}: ${line%% *} not found" ;;
            *"=> /"*) lib=${line#*=> }; libs[${lib%% (*}]=1 ;;
            /*) libs[${line%% (*}]=1 ;;
        esac
    done < <(LC_ALL=C ldd "$f" 2>/dev/null || true)
done
# glibc dlopen()s libgcc_s for pthread_cancel/pthread_exit unwinding, which
# ldd cannot see; without it those abort inside the VM.
if [ ${#libs[@]} -gt 0 ]; then
    gcc_s=$(/sbin/ldconfig -p 2>/dev/null |
        awk '/libgcc_s\.so\.1 .*x86-64/ { print $NF; exit }') || true
    [ -n "$gcc_s" ] && libs[$gcc_s]=1
fi
# Copy them to the same paths inside the image, and list their directories
# in LD_LIBRARY_PATH in case an rpath points elsewhere.
declare -A lib_dirs=()
for lib in "${!libs[@]}"; do
    case $lib in
        "$test_dir"/*)
            # Already in the image under /tests.
            dest=/tests/${lib#"$test_dir"/} ;;
        /tmp/*)
            # /init mounts a fresh tmpfs over /tmp, which would hide it.
            dest=/usr/local/lib/${lib##*/}
            cp -L "$lib" "$root$dest" ;;
        *)
            dest=$lib
            mkdir -p "$root${dest%/*}"
            cp -L "$lib" "$root$dest" ;;
    esac
    lib_dirs[${dest%/*}]=1
done
ld_path=$(IFS=:; echo "${!lib_dirs[*]}")

# sh_quote STRING: STRING as a single-quoted POSIX sh word.
sh_quote() {
    local q="'\\''"
    printf "'%s'" "${1//\'/$q}"
}
# Values baked into /init.
filter_q=$(sh_quote "${MPKIT_TEST_FILTER:-}")
extra_env=
for kv in ${MPKIT_VM_ENV:-}; do
    case $kv in
        [A-Za-z_]*=*) extra_env+="export ${kv%%=*}=$(sh_quote "${kv#*=}")"$'\n' ;;
        *) echo "$0: MPKIT_VM_ENV: not NAME=VALUE: $kv" >&2; exit 2 ;;
    esac
done
ld_path_q=$(sh_quote "$ld_path")

cat >"$root/init" <<EOF
#!/bin/sh
# Generated by tests/vm/vm.sh: run mpkit's tests, then power off.
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
# t_malloc_text_resident sets the fault-around window to a page there.
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
# Loopback up: the keyd example's test talks TCP on 127.0.0.1.
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
# If the kernel found no /dev/console before devtmpfs was mounted, init
# started without stdio: (re)attach it to the serial console.
exec </dev/console >/dev/console 2>&1

export PATH=/usr/local/bin:/bin:/sbin:/usr/bin:/usr/sbin
export LD_LIBRARY_PATH=$ld_path_q
export MPKIT_BACKEND=hw
export MPKIT_TEST_FILTER=$filter_q
[ -n "\$MPKIT_TEST_FILTER" ] || unset MPKIT_TEST_FILTER
$extra_env
echo  # the BIOS leaves the cursor mid-line
echo "MPKIT-VM-BEGIN"
echo "kernel: \$(uname -r), cpus: \$(nproc)"
echo "cpuinfo pku flag: \$(grep -o -w pku /proc/cpuinfo | head -1)"
if [ -x /usr/local/bin/mpkit ]; then
    echo "mpkit info:"
    mpkit info 2>&1 | sed 's/^/  /'
fi
echo "MPKIT-VM-TESTS"
/run-tests.sh vm /tests $test_timeout
echo "MPKIT-VM-DONE rc=\$?"
poweroff -f
EOF
chmod 755 "$root/init"

# The kernel's built-in initramfs already provides /dev/console, and
# creating device nodes needs root, so the archive has none.
(cd "$root" && find . | LC_ALL=C sort | "$busybox" cpio -o -H newc 2>/dev/null) |
    gzip -c >"$initrd.tmp"
mv "$initrd.tmp" "$initrd"

# ---------------------------------------------------------------- boot

# 1 GiB: the archive unpacks into rootfs, which gets at most half the
# memory, and a sanitizer build's tests pass 256 MiB.
qemu_args=(
    -cpu max -m 1024 -smp 2
    -nographic -no-reboot -nic none
    -kernel "$kernel" -initrd "$initrd"
    -append "console=ttyS0 quiet panic=-1${MPKIT_VM_APPEND:+ $MPKIT_VM_APPEND}"
)
# TCG runs both vCPUs in one host thread (thread=single), not one thread
# each: with a thread per vCPU, QEMU 7.2 lets a vCPU run kernel text that
# another vCPU is patching (static keys: a perf event, a sysctl), and the
# guest dies on a stray int3 or wedges both CPUs in soft lockups within
# seconds of such toggling; one thread takes the toggling without a fault.
# The guest still has two CPUs that preempt each other, so the threaded
# tests keep their interleavings.
if [ "$accel" = kvm ]; then
    qemu_args+=(-accel kvm)
else
    qemu_args+=(-accel tcg,thread=single)
fi

# boot: one run of the VM, console tee'd to $console_log; sets qemu_rc.
boot() {
    set +e
    # stdin from /dev/null: QEMU must not put a calling terminal into raw
    # mode.  The sed drops CRs and the terminal escapes (reset, clear
    # screen) that the BIOS sends, which would otherwise wipe the caller's
    # terminal; -u because buffering would make the live output arrive in
    # 4 KiB chunks.
    timeout -k 10 "$vm_timeout" "$qemu" "${qemu_args[@]}" </dev/null 2>&1 |
        sed -u -e 's/\r//g' -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/\x1b[c78]//g' |
        tee "$console_log"
    qemu_rc=${PIPESTATUS[0]}
    set -e
}

# A kernel that dies before it runs /init has not run a line of mpkit: under
# TCG with a host thread per vCPU, Debian's 6.12 kernel was seen to oops on a
# stray int3 while it patches its own text at boot (1 boot in many; see
# thread=single above).  That is the emulator's or the kernel's fault, so
# boot again, at most twice, and say so.
# A crash after /init has started counts as a failure, as always.
rm -f "$console_log".boot*
start=$(date +%s)
for attempt in 1 2 3; do
    log "booting ${kernel##*/}${MPKIT_VM_APPEND:+ ($MPKIT_VM_APPEND)} with $accel (timeout ${vm_timeout}s; console: $console_log)"
    boot
    grep -q 'MPKIT-VM-BEGIN' "$console_log" && break
    [ "$qemu_rc" -ne 124 ] && [ "$qemu_rc" -ne 137 ] || break
    [ "$attempt" -lt 3 ] || break
    cp "$console_log" "$console_log.boot$attempt"
    log "the kernel died before /init ran (console kept in $console_log.boot$attempt); booting again"
done
elapsed=$(($(date +%s) - start))

# ---------------------------------------------------------------- results

# The runner's per-test lines, with the indented output that follows them
# (a FAIL's or SKIP's output, a PASS's own summary lines; not the kernel
# messages that may come in between).
results=$(awk '
    /^MPKIT-VM-TESTS$/ { on = 1; next }
    /^MPKIT-VM-DONE rc=/ { exit }
    !on { next }
    /^(PASS|FAIL|SKIP) / { print; body = 1; next }
    /^    / && body { print; next }
    { body = 0 }
' "$console_log")
done_line=$(grep -m1 '^MPKIT-VM-DONE rc=' "$console_log" || true)
summary=$(grep -E '^vm: [0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' \
    "$console_log" | tail -n 1 || true)

echo
echo "---- vm results (${accel}, ${elapsed}s) ----"
[ -z "$results" ] || echo "$results"

if [ -n "$done_line" ] && [ -n "$summary" ]; then
    echo "$summary"
    failed=$(sed -E 's/^vm: [0-9]+ passed, ([0-9]+) failed.*/\1/' <<<"$summary")
    [ "$failed" -eq 0 ] && [ "$done_line" = "MPKIT-VM-DONE rc=0" ] && exit 0
    exit 1
fi

# The VM died, hung or the runner broke before its summary.
if [ "$qemu_rc" -eq 124 ] || [ "$qemu_rc" -eq 137 ]; then
    why="timed out after ${vm_timeout}s"
else
    why="stopped before /init finished (qemu exit status $qemu_rc, boot $attempt)"
fi
echo "---- last 40 lines of $console_log ----"
tail -n 40 "$console_log"
echo "----"
echo "vm.sh: the VM $why; counting that as one failure"
passed=$(grep -c '^PASS ' <<<"$results" || true)
failed=$(grep -c '^FAIL ' <<<"$results" || true)
skipped=$(grep -c '^SKIP ' <<<"$results" || true)
line="vm: $passed passed, $((failed + 1)) failed"
[ "$skipped" -eq 0 ] || line="$line, $skipped skipped"
echo "$line"
exit 1
