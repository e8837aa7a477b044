#!/usr/bin/env bash
# rr_server_test.sh SERVER - examples/rr_server.c under load, round-robin mode.
#
# Phase 1: wrk (2 threads, 32 keep-alive connections, 4 s) against
#   SERVER -m rr -t 4 -d 8 -p 0.  Checks: the server exits 0, wrk completed
#   requests with (almost) no socket errors, the server served at least what
#   wrk counted, and, when the machine has a CPU for each of the 4 workers
#   and 2 wrk threads, every worker accepted a connection with Jain >= 0.9.
#   On fewer CPUs the spread is printed, not checked: wrk opens its 32
#   connections in one burst, every worker is then running or runnable
#   rather than blocked in a wait, and round robin only takes turns among
#   blocked ones; the workers that get a CPU first take the whole burst
#   (the level-triggered listener stays ready in their instances).
# Phase 2: 20 connections made one at a time, each served before the next,
#   so every worker is idle when one arrives: round robin must give each
#   worker a share (every worker >= 1, Jain >= 0.9) on any machine.
# Exit: 0 pass, 1 fail, 77 skip (no wrk).
set -u
server=${1:?usage: rr_server_test.sh PATH_TO_example_rr_server}
if ! command -v wrk >/dev/null 2>&1; then
	echo "SKIP: wrk is not installed"
	exit 77
fi
tmp=$(mktemp -d)
spid=
cleanup() {
	[ -n "$spid" ] && kill -KILL "$spid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
bad() {
	echo "FAIL: $*"
	fail=1
}

# Starts the server in the background (stdout to $tmp/$1.out); sets spid
# and port.
start() {
	local name=$1
	shift
	"$server" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
	spid=$!
	port=
	for _ in $(seq 100); do
		port=$(sed -n 's/^listening on \([0-9]*\)$/\1/p' "$tmp/$name.out")
		[ -n "$port" ] && return 0
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.05
	done
	echo "FAIL: $name: the server did not print its port"
	cat "$tmp/$name.err"
	exit 1
}

# Waits (bounded) for the server; sets sstatus.
finish() {
	local name=$1
	for _ in $(seq 300); do
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$spid" 2>/dev/null; then
		bad "$name: the server did not exit on time"
		kill -KILL "$spid"
	fi
	wait "$spid"
	sstatus=$?
	spid=
	echo "-- $name: server output (exit $sstatus)"
	grep -E '^(worker|total)' "$tmp/$name.out"
	[ -s "$tmp/$name.err" ] && cat "$tmp/$name.err"
	[ "$sstatus" -eq 0 ] || bad "$name: server exit status $sstatus"
}

# Checks every worker accepted >= 1 and Jain >= 0.9 in $tmp/$1.out.
check_spread() {
	local name=$1 zero jain
	zero=$(awk '$1 == "worker" && $4 == 0' "$tmp/$name.out" | wc -l)
	jain=$(awk '$1 == "total" { print $7 }' "$tmp/$name.out")
	[ "$(grep -c '^worker' "$tmp/$name.out")" -eq 4 ] ||
		bad "$name: expected 4 worker lines"
	[ "$zero" -eq 0 ] || bad "$name: $zero worker(s) accepted nothing"
	awk -v j="${jain:-0}" 'BEGIN { exit !(j >= 0.9) }' ||
		bad "$name: Jain fairness $jain < 0.9"
}

# ---- phase 1: wrk ----
start wrk -m rr -t 4 -d 8 -p 0
timeout 30 wrk -t2 -c32 -d4s "http://127.0.0.1:$port/" >"$tmp/wrk.txt" 2>&1
wstatus=$?
echo "-- wrk (exit $wstatus)"
cat "$tmp/wrk.txt"
finish wrk
[ "$wstatus" -eq 0 ] || bad "wrk exit status $wstatus"
wreq=$(sed -n 's/^ *\([0-9]*\) requests in .*/\1/p' "$tmp/wrk.txt")
[ "${wreq:-0}" -gt 0 ] || bad "wrk completed no request"
# "Socket errors: connect A, read B, write C, timeout D" (absent when none).
serr=$(sed -n 's/^ *Socket errors: //p' "$tmp/wrk.txt" |
	tr -cs '0-9' ' ' | awk '{ s = 0; for (i = 1; i <= NF; i++) s += $i; print s }')
[ "${serr:-0}" -le 4 ] || bad "wrk reported $serr socket errors"
grep -q 'Non-2xx' "$tmp/wrk.txt" && bad "wrk saw non-2xx responses"
sreq=$(awk '$1 == "total" { print $5 }' "$tmp/wrk.out")
[ "${sreq:-0}" -ge "${wreq:-0}" ] ||
	bad "server served $sreq requests, wrk counted ${wreq:-0}"
ncpu=$(nproc)
if [ "$ncpu" -ge 6 ]; then
	check_spread wrk
else
	echo "note: $ncpu CPU(s) < 4 workers + 2 wrk threads: the spread of" \
		"wrk's connection burst is printed, not checked (see phase 2)"
fi

# ---- phase 2: connections one at a time ----
start seq -m rr -t 4 -d 20 -p 0
fds=()
for i in $(seq 20); do
	if ! exec {fd}<>"/dev/tcp/127.0.0.1/$port"; then
		bad "seq: connection $i refused"
		break
	fi
	fds+=("$fd")
	printf 'GET / HTTP/1.1\r\nHost: localhost\r\n\r\n' >&"$fd"
	line=
	IFS= read -r -t 5 line <&"$fd"
	[ "${line%$'\r'}" = "HTTP/1.1 200 OK" ] ||
		bad "seq: connection $i got '${line%$'\r'}'"
	# Let the worker that served it get back to its wait.
	sleep 0.02
done
for fd in "${fds[@]}"; do
	exec {fd}>&-
done
# SIGTERM ends the run early (and checks that it does so cleanly).
kill -TERM "$spid"
finish seq
check_spread seq

[ "$fail" -eq 0 ] && echo "PASS"
exit "$fail"
