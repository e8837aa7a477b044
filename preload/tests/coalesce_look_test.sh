#!/bin/sh
# coalesce_look_test.sh san=SANITIZE UEPOLL_RUN PROG - p_coalesce_look's
# write+poll rounds under `uepoll-run --coalesce 100000` (no option else:
# the NOPOLL default) make no write(2) per round (at most 10 for 200
# rounds, beyond what 0 rounds make): a poll of an exact, coalesced eventfd
# does not arm its kernel fd by itself.  Counted with strace (77 without).
set -u
san=${1#san=} run=$2 prog=$3
if [ -n "$san" ]; then
	echo "SKIP: LD_PRELOAD cannot be combined with the $san sanitizer runtime"
	exit 77
fi
command -v strace >/dev/null || { echo "SKIP: no strace"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
writes() {
	strace -f -c -e trace=write -o "$tmp/c" "$run" --coalesce 100000 -- \
		"$prog" "$1" >"$tmp/out" || { echo "FAIL: exit $?"; exit 1; }
	[ "$(cat "$tmp/out")" = "$1" ] || { echo "FAIL: printed $(cat "$tmp/out")"; exit 1; }
	awk '$NF == "total" { print $4 }' "$tmp/c"
}
a=$(writes 0) b=$(writes 200)
echo "write(2) calls for 200 rounds: $((b - a))"
[ $((b - a)) -le 10 ] || { echo "FAIL: a look arms the kernel fd"; exit 1; }
exit 0
