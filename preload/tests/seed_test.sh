#!/bin/sh
# seed_test.sh san=SANITIZE UEPOLL_RUN SEEDS_DIR CC WHICH
#
# The proposals' own test programs, taken from their posts in SEEDS_DIR
# (../shared/seeds: the program is cut out of the mail at test time, never
# copied into this tree), compiled as posted against the system's headers
# (only the includes and the constant the posts leave out are supplied on
# the command line), and run unmodified under uepoll-run.  WHICH:
#   000o  round-robin proposal, `-o`: every thread gets events (nohit 0)
#   000e  round-robin proposal, `-e`: plain EPOLLEXCLUSIVE, as the kernel
#         (every write read by one thread, the program ends)
#   000r  `-e` with uepoll-run --roundrobin: the policy makes every
#         EPOLLEXCLUSIVE registration round-robin (nohit 0)
#   002   min-wait proposal: both events in one wait (epoll_wait=2; the
#         kernel answers EPOLL_CTL_MIN_WAIT with EBADF)
#   004   delayed-wakeup proposal: a publisher process and its forked
#         subscriber on one eventfd, with uepoll-run --coalesce 5000 (5 ms);
#         the program loops for ever: it must run the 2 s that timeout
#         gives it (status 124) without printing an error ("XXX: ...")
set -u
san=${1#san=} run=$2 seeds=$3 cc=$4 which=$5
if [ -n "$san" ]; then
	echo "SKIP: LD_PRELOAD cannot be combined with the $san sanitizer runtime"
	exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# cut FILE START_RE END_RE: the lines from START_RE up to END_RE (excluded).
cut_prog() {
	awk -v s="$2" -v e="$3" '$0 ~ s { on = 1 } $0 ~ e { on = 0 } on' "$1"
}

case $which in
000*)
	post=$(ls "$seeds"/000_*.txt 2>/dev/null | head -1)
	[ -n "$post" ] || { echo "SKIP: no proposal 000 in $seeds"; exit 77; }
	cut_prog "$post" '^#include <unistd.h>' '^Jason Baron \(2\):' >"$tmp/p.c"
	# The post calls strcmp without <string.h>.
	flags="-include string.h"
	;;
002)
	post=$(ls "$seeds"/002_*.txt 2>/dev/null | head -1)
	[ -n "$post" ] || { echo "SKIP: no proposal 002 in $seeds"; exit 77; }
	cut_prog "$post" '^struct d \{' '^Signed-off-by' >"$tmp/p.c"
	# The post shows no includes; EPOLL_CTL_MIN_WAIT is its patch's value.
	flags="-include stdio.h -include unistd.h -include pthread.h -include sys/epoll.h -DEPOLL_CTL_MIN_WAIT=4"
	;;
004)
	post=$(ls "$seeds"/004_*.txt 2>/dev/null | head -1)
	[ -n "$post" ] || { echo "SKIP: no proposal 004 in $seeds"; exit 77; }
	cut_prog "$post" '^#include <assert.h>' '^# taskset' >"$tmp/p.c"
	# stdout line-buffered (the program's source is untouched): a line
	# printed just before timeout's SIGTERM would die in the buffer.
	printf '#include <stdio.h>\nstatic void __attribute__((constructor)) lb(void) { setvbuf(stdout, NULL, _IOLBF, 0); }\n' >"$tmp/lb.h"
	flags="-include $tmp/lb.h"
	;;
*)
	echo "unknown program $which"
	exit 2
	;;
esac
[ -s "$tmp/p.c" ] || { echo "FAIL: no program found in $post"; exit 1; }
# shellcheck disable=SC2086
if ! "$cc" -w -O2 -pthread $flags -o "$tmp/p" "$tmp/p.c" 2>"$tmp/cc.err"; then
	cat "$tmp/cc.err"
	echo "FAIL: the program in $post does not compile"
	exit 1
fi

case $which in
000o | 000e | 000r)
	opt=-${which#000} pol=
	[ "$opt" = -r ] && opt=-e pol=--roundrobin
	"$run" --stats $pol -- "$tmp/p" "$opt" >"$tmp/out" 2>"$tmp/err"
	st=$?
	grep -E '^(total events|nohit)' "$tmp/out"
	cat "$tmp/err"
	[ $st -eq 0 ] || { echo "FAIL: exit status $st"; exit 1; }
	grep -Eq 'uepoll-preload: .*instances=100 ' "$tmp/err" ||
		{ echo "FAIL: the 100 instances were not uepoll's"; exit 1; }
	total=$(sed -n 's/^total events is: //p' "$tmp/out")
	nohit=$(sed -n 's/^nohit is: //p' "$tmp/out")
	# 20000 writes, each read by one thread; the last ones may still be
	# in the pipe when the program cancels its threads.
	[ "${total:-0}" -ge 19900 ] || { echo "FAIL: total $total"; exit 1; }
	if [ "$opt" = -o ] || [ -n "$pol" ]; then
		[ "$nohit" = 0 ] || { echo "FAIL: nohit is $nohit"; exit 1; }
	fi
	;;
002)
	# The kernel: EPOLL_CTL_MIN_WAIT does not exist (EBADF for fd -1).
	"$tmp/p" >"$tmp/native" 2>&1
	echo "native: $(cat "$tmp/native")"
	"$run" --stats -- "$tmp/p" >"$tmp/out" 2>"$tmp/err"
	st=$?
	cat "$tmp/out" "$tmp/err"
	[ $st -eq 0 ] || { echo "FAIL: exit status $st"; exit 1; }
	grep -qx 'epoll_wait=2' "$tmp/out" || { echo "FAIL: not one batch"; exit 1; }
	;;
004)
	# timeout signals its process group: the subscriber ends with it.
	timeout 2 "$run" --coalesce 5000 -- "$tmp/p" >"$tmp/out" 2>"$tmp/err"
	st=$?
	head -5 "$tmp/out"
	head -5 "$tmp/err"
	# The subscriber got timeout's SIGTERM too: gone within a second.
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		left=$(pgrep -f -- "$tmp/p\$" || true)
		[ -z "$left" ] && break
		sleep 0.1
	done
	if [ -n "$left" ]; then
		# shellcheck disable=SC2086
		kill -9 $left
		echo "FAIL: the program's processes outlived timeout: $left"
		exit 1
	fi
	[ $st -eq 124 ] || { echo "FAIL: exit status $st (124: ran until timeout)"; exit 1; }
	if grep -q 'XXX:' "$tmp/out"; then
		echo "FAIL: $(grep -c 'XXX:' "$tmp/out") error line(s): $(grep -m1 'XXX:' "$tmp/out")"
		exit 1
	fi
	echo "ran 2 s under --coalesce 5000, no error"
	;;
esac
exit 0
