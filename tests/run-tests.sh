#!/bin/sh
# run-tests.sh - run mpkit's test binaries and summarise the results.
#
# Usage: run-tests.sh LABEL DIR [TIMEOUT_SECONDS]
#
# Runs every executable DIR/t_* in sorted order, each from inside DIR, with
# stdin from /dev/null and a per-test timeout (default 60s).  A test's exit
# status means: 0 = pass, 77 = skip, anything else (including a timeout or
# death by signal) = fail.  Prints one line per test:
#
#   PASS t_name
#   SKIP t_name            followed by its first output line, indented
#   FAIL t_name (exit N)   followed by its output, indented by 4 spaces
#
# and ends with exactly one summary line:
#
#   LABEL: N passed, M failed[, K skipped]
#
# Exit status: 0 if no test failed, 1 otherwise, 2 on a usage error.
#
# Tests run with LC_ALL=C (for a locale-independent order and output).
#
# Environment:
#   MPKIT_TEST_FILTER  optional glob or substring; only tests whose name
#                      matches it run (e.g. "pkey" or "t_alloc_*"); several,
#                      comma-separated, run the tests matching any.
#   MPKIT_TEST_REPEAT  optional count: each test runs that many times in a
#                      row and passes only if every run passes (stress runs
#                      of racy tests: a failing run stops it and is named).
#   MPKIT_TEST_PRELOAD optional library path: every test runs with it in
#                      LD_PRELOAD (the whole suite under the drop-in
#                      allocator: `make check-malloc`).
#
# Must stay POSIX sh: it runs under busybox sh inside the QEMU VM too.

usage() {
    echo "usage: $0 LABEL DIR [TIMEOUT_SECONDS]" >&2
    exit 2
}

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    usage
fi
label=$1
dir=$2
limit=${3:-60}
repeat=${MPKIT_TEST_REPEAT:-1}
case $repeat in
    '' | *[!0-9]* | 0) echo "$0: bad MPKIT_TEST_REPEAT '$repeat'" >&2; usage ;;
esac

case $limit in
    '' | *[!0-9]*) echo "$0: bad timeout '$limit'" >&2; usage ;;
esac
if [ ! -d "$dir" ]; then
    echo "$0: no such directory: $dir" >&2
    exit 2
fi
if ! command -v timeout >/dev/null 2>&1; then
    echo "$0: 'timeout' not found (coreutils or busybox provides it)" >&2
    exit 2
fi

# Sorted glob order must not depend on the caller's locale.
LC_ALL=C
export LC_ALL

# Tests longer than this many lines of output are shown by their tail only,
# so that a runaway test cannot flood the log (or a slow emulated serial port).
max_lines=200

out=$(mktemp "${TMPDIR:-/tmp}/mpkit-test.XXXXXX") || exit 2
trap 'rm -f "$out"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# indent FILE: print FILE indented by 4 spaces, at most $max_lines lines.
# awk (not sed) so that a last line without a newline still gets one.
indent() {
    n=$(wc -l <"$1")
    if [ "$n" -gt "$max_lines" ]; then
        # A failed check's line (t.h's t_fail: "FILE.c:LINE: ...") says
        # what went wrong, so it survives the cut, up to 50 of them.
        head -n "$((n - max_lines))" "$1" | grep -E '^[A-Za-z0-9_./-]+\.(c|cc|h):[0-9]+: ' |
            head -n 50 | awk '{ print "    [kept] " $0 }'
        echo "    [... $((n - max_lines)) earlier lines omitted ...]"
        tail -n "$max_lines" "$1" | awk '{ print "    " $0 }'
    else
        awk '{ print "    " $0 }' "$1"
    fi
}

passed=0
failed=0
skipped=0

# Tests run from inside DIR so that they can find helper files next to them.
cd "$dir" || exit 2

for path in ./t_*; do
    if [ ! -f "$path" ] || [ ! -x "$path" ]; then
        continue
    fi
    name=${path##*/}
    if [ -n "${MPKIT_TEST_FILTER:-}" ]; then
        # Wrapping in * makes a plain word a substring match and keeps a
        # glob working.  The expansion is deliberately unquoted (glob).
        # set -f: the patterns are not file names here.
        hit= old_ifs=$IFS
        IFS=,
        set -f
        for pat in $MPKIT_TEST_FILTER; do
            # shellcheck disable=SC2254
            case $name in
                *$pat*) hit=1 ;;
            esac
        done
        set +f
        IFS=$old_ifs
        [ -n "$hit" ] || continue
    fi

    # Output goes to a file, not $(...): a test that leaves a background
    # child holding stdout open would otherwise hang the runner.  The brace
    # group makes the shell's own "Segmentation fault" report land in the
    # captured output too.  (No subshell here: dash 0.5.12 drops the
    # redirections of a (subshell) nested in a redirected group.)
    run=0
    while [ "$run" -lt "$repeat" ]; do
        run=$((run + 1))
        start=$(date +%s)
        if [ -n "${MPKIT_TEST_PRELOAD:-}" ]; then
            { LD_PRELOAD=$MPKIT_TEST_PRELOAD${LD_PRELOAD:+:$LD_PRELOAD} timeout "$limit" "./$name"; } </dev/null >"$out" 2>&1
        else
            { timeout "$limit" "./$name"; } </dev/null >"$out" 2>&1
        fi
        rc=$?
        [ "$rc" -eq 0 ] || break
    done
    elapsed=$(($(date +%s) - start))
    # which run failed, when there are several
    nth=
    [ "$repeat" -gt 1 ] && nth=", run $run of $repeat"

    case $rc in
        0)
            passed=$((passed + 1))
            if [ "$repeat" -gt 1 ]; then echo "PASS $name ($repeat runs)"; else echo "PASS $name"; fi
            # lines a test wants in the log: the pitfalls table's rows,
            # and its own summary lines ("t_name: ...")
            grep -e '^pit: ' -e "^$name: " "$out" | awk '{ print "    " $0 }'
            ;;
        77)
            skipped=$((skipped + 1))
            echo "SKIP $name"
            head -n 1 "$out" | awk '{ print "    " $0 }'
            ;;
        *)
            failed=$((failed + 1))
            # GNU timeout exits 124 when it fires; busybox timeout execs the
            # test and SIGTERMs/SIGKILLs it (143/137) - so also check the clock.
            case $rc in
                124 | 137 | 143) [ "$elapsed" -ge "$limit" ] && timed_out=1 ;;
                *) timed_out= ;;
            esac
            if [ -n "$timed_out" ]; then
                echo "FAIL $name (exit $rc, timed out after ${limit}s$nth)"
            elif [ "$rc" -gt 128 ]; then
                echo "FAIL $name (exit $rc, SIG$(kill -l $((rc - 128)) 2>/dev/null)$nth)"
            else
                echo "FAIL $name (exit $rc$nth)"
            fi
            indent "$out"
            ;;
    esac
done

total=$((passed + failed + skipped))
if [ "$total" -eq 0 ]; then
    echo "$0: warning: no tests matched in $dir" >&2
fi

summary="$label: $passed passed, $failed failed"
[ "$skipped" -gt 0 ] && summary="$summary, $skipped skipped"
echo "$summary"

[ "$failed" -eq 0 ]
