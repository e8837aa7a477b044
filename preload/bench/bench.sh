#!/usr/bin/env bash
# bench.sh BUILD_DIR [REPS] [pipe] - the preload's benchmark (issue 20): what a
# program pays for it, and real servers native vs preloaded.  Prints one
# Markdown table; medians of REPS (default 5) runs (the pipe row: the
# minimum of 4*REPS), native and preloaded runs interleaved.  Use a Release build.  Rows:
#   pipe      ns per read/write call of a pipe (a program without epoll);
#   redis     redis-benchmark SET/GET requests/s and p99 (50 clients);
#   nginx     wrk requests/s, p99 and per-worker spread (Jain) (2 workers,
#             64 connections), native,
#             preloaded with the policies off, with --roundrobin and with
#             --min-wait-us 200.
# A server whose packages are missing is left out (scripts/deps.sh
# nginx-light redis-server redis-tools wrk installs them).  With "pipe", the
# pipe row only: uepoll-bench's real group (`uepoll-bench run real`, issue
# 22) measures the servers, with more rows and checks; scripts/bench.sh
# runs that, then this with "pipe".
set -u
build=${1:?usage: bench.sh BUILD_DIR [REPS]}
reps=${2:-5}
only=${3:-}
run=$build/preload/uepoll-run
cost=$build/preload/bench/pipe_cost
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.3f", b / a; else print "-" }'; }
port_free() { ! (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null; }
# Below the ephemeral range (32768-60999), where clients' ports come from.
pick_port() { p=$((20000 + RANDOM % 12000)); while ! port_free $p; do p=$((p + 1)); done; echo $p; }
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }

echo "| row | native | preloaded | ratio (preloaded/native) |"
echo "|---|---|---|---|"

# The minimum of many short runs: on a shared machine noise only ever adds
# to a per-call cost, and a median of a few runs moved by 15% between
# identical runs.
for r in $(seq $((4 * reps))); do
	taskset -c 0 "$cost" 500000 >>"$tmp/pipe.n"
	taskset -c 0 "$run" -- "$cost" 500000 >>"$tmp/pipe.p"
done
a=$(sort -g "$tmp/pipe.n" | head -1) b=$(sort -g "$tmp/pipe.p" | head -1)
echo "| pipe read/write, ns per call, min of $((4 * reps)) (lower is better) | $a | $b | $(ratio "$a" "$b") |"

[ "$only" = pipe ] && exit 0

if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
	redis_once() { # $1: launcher or ""; appends "set get p99set p99get"
		port=$(pick_port)
		$1 redis-server --port "$port" --bind 127.0.0.1 --save '' \
			--appendonly no --dir "$tmp" >/dev/null 2>&1 &
		pid=$!
		wait_port "$port" || return 1
		redis-benchmark -p "$port" -n 200000 -c 50 -t set,get --csv 2>/dev/null |
			awk -F'"' '/^"SET"/ { s = $4; ps = $14 } /^"GET"/ { g = $4; pg = $14 }
				END { print s, g, ps, pg }' >>"$2"
		redis-cli -p "$port" shutdown nosave >/dev/null 2>&1
		wait $pid 2>/dev/null
		pid=
	}
	for r in $(seq "$reps"); do
		redis_once "" "$tmp/redis.n"
		redis_once "$run --" "$tmp/redis.p"
	done
	for col in 1:SET 2:GET; do
		c=${col%%:*} name=${col#*:}
		a=$(awk -v c=$c '{ print $c }' "$tmp/redis.n" | median)
		b=$(awk -v c=$c '{ print $c }' "$tmp/redis.p" | median)
		echo "| redis $name requests/s | $a | $b | $(ratio "$a" "$b") |"
		a=$(awk -v c=$((c + 2)) '{ print $c }' "$tmp/redis.n" | median)
		b=$(awk -v c=$((c + 2)) '{ print $c }' "$tmp/redis.p" | median)
		echo "| redis $name p99 ms (lower is better) | $a | $b | $(ratio "$a" "$b") |"
	done
fi

if command -v nginx >/dev/null && command -v wrk >/dev/null; then
	nginx_once() { # $1: launcher or ""; appends "rps p99_ms jain"
		port=$(pick_port)
		mkdir -p "$tmp/ng"
		rm -f "$tmp/ng/access.log"
		cat >"$tmp/ng/nginx.conf" <<CONF
worker_processes 2;
daemon off;
pid $tmp/ng/nginx.pid;
error_log $tmp/ng/error.log;
events { worker_connections 1024; }
http {
	log_format byworker '\$pid';
	access_log $tmp/ng/access.log byworker buffer=64k;
	client_body_temp_path $tmp/ng; proxy_temp_path $tmp/ng;
	fastcgi_temp_path $tmp/ng; uwsgi_temp_path $tmp/ng; scgi_temp_path $tmp/ng;
	server { listen 127.0.0.1:$port; location / { return 200 "hello\n"; } }
}
CONF
		$1 nginx -p "$tmp/ng" -c "$tmp/ng/nginx.conf" -e "$tmp/ng/error.log" >/dev/null 2>&1 &
		pid=$!
		wait_port "$port" || return 1
		wrk -t2 -c64 -d5s --latency "http://127.0.0.1:$port/" 2>/dev/null |
			awk '/Requests\/sec/ { r = $2 }
			     /^ +99%/ { v = $2; m = 1;
				if (v ~ /us$/) m = 0.001; else if (v ~ /ms$/) m = 1; else if (v ~ /s$/) m = 1000;
				sub(/[a-z]+$/, "", v); p = v * m }
			     END { printf "%s %s ", r, p }' >>"$2"
		kill -QUIT $pid
		wait $pid 2>/dev/null
		pid=
		# Per-worker spread: Jain's index of the requests each worker
		# served (1: even; 1/2: one worker served everything).
		awk '{ n[$1]++ } END { for (w in n) { s += n[w]; q += n[w] * n[w]; k++ }
			if (k < 2) k = 2; print (q ? s * s / (k * q) : 0) }' \
			"$tmp/ng/access.log" >>"$2"
	}
	for r in $(seq "$reps"); do
		nginx_once "" "$tmp/ng.n"
		nginx_once "$run --" "$tmp/ng.p"
		nginx_once "$run --roundrobin --" "$tmp/ng.r"
		nginx_once "$run --min-wait-us 200 --" "$tmp/ng.m"
	done
	for f in p:preloaded r:--roundrobin m:--min-wait-us_200; do
		file=$tmp/ng.${f%%:*}
		a=$(awk '{ print $1 }' "$tmp/ng.n" | median) b=$(awk '{ print $1 }' "$file" | median)
		echo "| nginx requests/s, ${f#*:} | $a | $b | $(ratio "$a" "$b") |"
		a=$(awk '{ print $2 }' "$tmp/ng.n" | median) b=$(awk '{ print $2 }' "$file" | median)
		echo "| nginx p99 ms (lower is better), ${f#*:} | $a | $b | $(ratio "$a" "$b") |"
		a=$(awk '{ print $3 }' "$tmp/ng.n" | median) b=$(awk '{ print $3 }' "$file" | median)
		echo "| nginx per-worker spread (Jain, 1 = even), ${f#*:} | $a | $b | $(ratio "$a" "$b") |"
	done
fi
