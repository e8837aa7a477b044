#!/bin/sh
# run_test.sh san=SANITIZE UEPOLL_RUN MODE PROGRAM [ARGS...]
#
# Runs a preload test program under uepoll-run.  MODE:
#   compare  run it without and with the preload: same exit status, same
#            stdout, and UEPOLL_STATS shows uepoll objects were made;
#   preload  run it with the preload only (it checks itself), and require
#            the stats line (the preload was really in the process).
# Exit 77 (skip) in the sanitizer builds: an ASan or TSan runtime must be
# the first object loaded, before any LD_PRELOAD library, and a sanitized
# preload library cannot go into an unsanitized program either.
set -u
san=${1#san=} run=$2 mode=$3
shift 3
if [ -n "$san" ]; then
	echo "SKIP: LD_PRELOAD cannot be combined with the $san sanitizer runtime"
	exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

stats_used() {
	# instances=N or eventfds=N with N > 0 on the preload's exit line.
	grep -Eq 'uepoll-preload: .*(instances|eventfds)=[1-9]' "$1"
}

case $mode in
compare)
	"$@" >"$tmp/native.out" 2>"$tmp/native.err"
	st1=$?
	"$run" --stats -- "$@" >"$tmp/pre.out" 2>"$tmp/pre.err"
	st2=$?
	if [ $st1 -ne $st2 ]; then
		echo "FAIL: exit status $st1 native, $st2 preloaded"
		cat "$tmp/native.err" "$tmp/pre.err"
		exit 1
	fi
	[ $st1 -eq 77 ] && { cat "$tmp/native.err"; exit 77; }
	if ! diff -u "$tmp/native.out" "$tmp/pre.out"; then
		echo "FAIL: output differs with the preload"
		exit 1
	fi
	cat "$tmp/pre.err"
	stats_used "$tmp/pre.err" || { echo "FAIL: uepoll not used"; exit 1; }
	[ $st1 -eq 0 ] || { cat "$tmp/native.err"; exit 1; }
	;;
preload)
	"$run" --stats -- "$@" 2>"$tmp/pre.err"
	st=$?
	cat "$tmp/pre.err"
	[ $st -eq 0 ] || exit $st
	stats_used "$tmp/pre.err" || { echo "FAIL: uepoll not used"; exit 1; }
	;;
*)
	echo "unknown mode $mode"
	exit 2
	;;
esac
exit 0
