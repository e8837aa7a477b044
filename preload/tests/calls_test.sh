#!/bin/sh
# calls_test.sh san=SANITIZE UEPOLL_RUN P_CALLS - fast by default (issue 35),
# as a count of system calls, never a timing: p_calls's rounds (an eventfd
# write, two zero-timeout epoll_waits, a read) under uepoll-run with no
# option make no system call (at most 10 for 1000 rounds, beyond what the
# same program makes for 0 rounds), where the kernel's objects make 4 a
# round; with --exact (every object exact from its creation) they make at
# least 1 a round, which shows the count can tell the modes apart.  The
# calls are counted by strace -f -c (skip, 77, without strace).
set -u
san=${1#san=} run=$2 prog=$3
if [ -n "$san" ]; then
	echo "SKIP: LD_PRELOAD cannot be combined with the $san sanitizer runtime"
	exit 77
fi
command -v strace >/dev/null || { echo "SKIP: no strace"; exit 77; }
N=1000
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# calls MODE ROUNDS: the total count of system calls, checking the output.
calls() {
	mode=$1 rounds=$2
	case $mode in
	native) set -- "$prog" "$rounds" ;;
	default) set -- "$run" -- "$prog" "$rounds" ;;
	exact) set -- "$run" --exact -- "$prog" "$rounds" ;;
	esac
	# uepoll-run execs the program: strace -f follows it.
	strace -f -c -o "$tmp/c" "$@" >"$tmp/out" 2>"$tmp/err" || {
		echo "FAIL: $mode $rounds exited $?" >&2
		cat "$tmp/err" >&2
		exit 1
	}
	[ "$(cat "$tmp/out")" = "$rounds" ] || {
		echo "FAIL: $mode $rounds printed $(cat "$tmp/out")" >&2
		exit 1
	}
	# The total line: % time, seconds, usecs/call, calls, [errors,] total.
	awk '$NF == "total" { print $4 }' "$tmp/c"
}

per() { # MODE: the calls N rounds add
	a=$(calls "$1" 0) b=$(calls "$1" $N)
	echo $((b - a))
}
native=$(per native) default=$(per default) exact=$(per exact)
echo "system calls for $N rounds: native $native, uepoll-run $default, uepoll-run --exact $exact"
[ "$native" -ge $((4 * N)) ] || { echo "FAIL: the count is broken (native)"; exit 1; }
[ "$exact" -ge "$N" ] || { echo "FAIL: --exact made fewer calls than rounds"; exit 1; }
[ "$default" -le 10 ] || { echo "FAIL: the default makes system calls per round"; exit 1; }
exit 0
