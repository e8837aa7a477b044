#!/bin/sh
# cli_test.sh san=SANITIZE UEPOLL_RUN CC - uepoll-run's own behaviour: --help lists
# every option, CMD's exit status comes back, a bad option is refused, and
# a static executable runs unchanged with a word on stderr.
set -u
san=${1#san=} run=$2 cc=$3
if [ -n "$san" ]; then
	echo "SKIP: LD_PRELOAD cannot be combined with the $san sanitizer runtime"
	exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$run" --help >"$tmp/help" || fail "--help status"
for o in --roundrobin --min-wait-us --coalesce --nospin --spin-us --fifo --stats; do
	grep -q -- "$o" "$tmp/help" || fail "--help does not list $o"
done
"$run" -- sh -c 'exit 7'
[ $? -eq 7 ] || fail "exit status of CMD not passed on"
"$run" --stats sh -c 'exit 6' 2>/dev/null
[ $? -eq 6 ] || fail "CMD without --: status"
"$run" 2>/dev/null
[ $? -eq 2 ] || fail "no CMD: not 2"
"$run" --bogus -- true 2>/dev/null && fail "unknown option accepted"
"$run" --spin-us 5x -- true 2>/dev/null && fail "bad --spin-us accepted"
"$run" -- /nonexistent/cmd 2>/dev/null
[ $? -eq 127 ] || fail "missing command: not 127"
# The options reach the program's environment.
"$run" --roundrobin --min-wait-us 5 --coalesce 100,4 --nospin --fifo --spin-us 30 -- \
	sh -c 'echo $UEPOLL_ROUNDROBIN $UEPOLL_MIN_WAIT_US $UEPOLL_EVENTFD_COALESCE $UEPOLL_NOSPIN $UEPOLL_WAKE_FIFO $UEPOLL_SPIN_US; case $LD_PRELOAD in */libuepoll-preload.so*) echo preload;; esac' \
	>"$tmp/env"
[ "$(cat "$tmp/env")" = "1 5 100,4 1 1 30
preload" ] || fail "environment: $(cat "$tmp/env")"

printf 'int main(void) { return 5; }\n' >"$tmp/s.c"
if "$cc" -static -o "$tmp/s" "$tmp/s.c" 2>/dev/null; then
	"$run" -- "$tmp/s" 2>"$tmp/err"
	[ $? -eq 5 ] || fail "static program: status"
	grep -q 'statically linked' "$tmp/err" || fail "static program: no word"
else
	echo "(no static libc: the static case is not checked)"
fi
exit 0
