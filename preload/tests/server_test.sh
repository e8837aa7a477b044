#!/usr/bin/env bash
# server_test.sh san=SANITIZE UEPOLL_RUN DEPS_SH nginx|redis|memcached|node
#
# A real server from Debian's packages, on loopback, with and without the
# preload: started, driven by a real client whose answers are checked
# (bounded request counts), stopped cleanly, and with the preload its
# UEPOLL_STATS lines must show uepoll instances.  The packages are
# installed with scripts/deps.sh; 77 (skip) if that is not possible.
set -u
san=${1#san=} run=$2 deps=$3 which=$4
if [ -n "$san" ]; then
	echo "SKIP: LD_PRELOAD cannot be combined with the $san sanitizer runtime"
	exit 77
fi
tmp=$(mktemp -d) || exit 1
pid=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$tmp"/*.log; do [ -f "$f" ] && tail -n 20 "$f"; done; exit 1; }

# A loopback port nothing answers on (bash's /dev/tcp).
port_free() { ! (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null; }
# Below the kernel's ephemeral range (32768-60999 by default), so that no
# client connection of another test running meanwhile holds it.
pick_port() {
	p=$((20000 + ($$ + RANDOM) % 12000))
	while ! port_free $p; do p=$((p + 1)); done
	echo $p
}

# wait_port PORT: up to 10 s for the server to listen.
wait_port() {
	i=0
	while [ $i -lt 100 ]; do
		(exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# wait_exit: up to 20 s for the server to exit; its status in $st.
wait_exit() {
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 200 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -0 "$pid" 2>/dev/null && return 1
	wait "$pid"
	st=$?
	pid=
	return 0
}

run_nginx() { # $1: "" or the launcher
	port=$(pick_port)
	mkdir -p "$tmp/ng" && rm -f "$tmp"/ng*.log
	cat >"$tmp/ng/nginx.conf" <<CONF
worker_processes 2;
daemon off;
pid $tmp/ng/nginx.pid;
error_log $tmp/ngerr.log info;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path $tmp/ng;
	proxy_temp_path $tmp/ng;
	fastcgi_temp_path $tmp/ng;
	uwsgi_temp_path $tmp/ng;
	scgi_temp_path $tmp/ng;
	server {
		listen 127.0.0.1:$port;
		location / { return 200 "hello \$request_uri\n"; }
	}
}
CONF
	$1 nginx -p "$tmp/ng" -c "$tmp/ng/nginx.conf" -e "$tmp/ngerr.log" \
		>"$tmp/ngout.log" 2>&1 &
	pid=$!
	wait_port "$port" || fail "nginx did not listen"
	# 200 requests, 8 at a time, each answer checked.
	seq 1 200 | xargs -P 8 -I{} sh -c \
		'[ "$(curl -s --max-time 5 http://127.0.0.1:'"$port"'/r{})" = "hello /r{}" ] || echo bad {}' \
		>"$tmp/bad" 2>&1
	[ -s "$tmp/bad" ] && fail "nginx: wrong answers: $(head -3 "$tmp/bad")"
	kill -QUIT "$pid"
	wait_exit || fail "nginx did not stop"
	[ "$st" -eq 0 ] || fail "nginx exit status $st"
}

run_redis() {
	port=$(pick_port)
	rm -f "$tmp"/rd*.log
	$1 redis-server --port "$port" --bind 127.0.0.1 --save '' \
		--appendonly no --daemonize no --dir "$tmp" \
		--logfile "$tmp/rdlog.log" >"$tmp/rdout.log" 2>"$tmp/rderr.log" &
	pid=$!
	wait_port "$port" || fail "redis did not listen"
	c="redis-cli -p $port"
	[ "$($c set k hello)" = OK ] || fail "redis set"
	[ "$($c get k)" = hello ] || fail "redis get"
	i=0
	while [ $i -lt 100 ]; do $c incr n >/dev/null; i=$((i + 1)); done
	[ "$($c get n)" = 100 ] || fail "redis incr: $($c get n)"
	redis-benchmark -p "$port" -n 5000 -c 10 -t set,get,lpush,lpop -q \
		>"$tmp/rdbench.log" 2>&1 || fail "redis-benchmark"
	[ "$($c dbsize)" -ge 2 ] || fail "redis dbsize"
	$c shutdown nosave >/dev/null 2>&1
	wait_exit || fail "redis did not stop"
	[ "$st" -eq 0 ] || fail "redis exit status $st"
}

# memcached: libevent, a thread per worker; the text protocol spoken
# through bash's /dev/tcp, every value read back.
mc_check() { # PORT N
	{
		i=0
		while [ $i -lt "$2" ]; do
			printf 'set k%d 0 0 %d\r\nv%d\r\n' $i $((${#i} + 1)) $i
			printf 'get k%d\r\n' $i
			i=$((i + 1))
		done
		printf 'quit\r\n'
	} | timeout 20 bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$1"'; cat <&0 >&3 & cat <&3' | tr -d '\r' >"$tmp/mc.out"
	i=0
	while [ $i -lt "$2" ]; do
		grep -qx "v$i" "$tmp/mc.out" || return 1
		i=$((i + 1))
	done
	[ "$(grep -cx STORED "$tmp/mc.out")" -eq "$2" ]
}

run_memcached() {
	port=$(pick_port)
	rm -f "$tmp"/mc*.log
	$1 memcached -l 127.0.0.1 -p "$port" -U 0 -t 4 -u root -v \
		>"$tmp/mcout.log" 2>&1 &
	pid=$!
	wait_port "$port" || fail "memcached did not listen"
	for c in 1 2 3 4; do
		mc_check "$port" 100 || fail "memcached: wrong answers (connection $c)"
	done
	kill -TERM "$pid"
	wait_exit || fail "memcached did not stop"
	# SIGTERM: memcached exits with 0 once its threads are stopped.
	[ "$st" -eq 0 ] || fail "memcached exit status $st"
}

run_node() {
	rm -f "$tmp"/nd*.log
	timeout 60 $1 node "$(dirname "$0")/p_node_workers.js" \
		>"$tmp/ndout.log" 2>"$tmp/nderr.log"
	st=$?
	[ "$st" -eq 0 ] || fail "node exit status $st"
	grep -qx 'ok 2000' "$tmp/ndout.log" || fail "node: $(cat "$tmp/ndout.log")"
}

case $which in
nginx) pkgs="nginx-light curl" bin=nginx ;;
node) pkgs="nodejs" bin=node ;;
memcached) pkgs="memcached" bin=memcached ;;
redis) pkgs="redis-server redis-tools" bin=redis-server ;;
*) echo "unknown server $which"; exit 2 ;;
esac
if ! command -v "$bin" >/dev/null 2>&1; then
	"$deps" $pkgs >/dev/null 2>&1 || { echo "SKIP: cannot install $pkgs"; exit 77; }
fi
command -v "$bin" >/dev/null 2>&1 || { echo "SKIP: no $bin"; exit 77; }
PATH=$PATH:/usr/sbin

"run_$which" ""
echo "$which: native run ok"
"run_$which" "$run --stats --"
echo "$which: preloaded run ok"
cat "$tmp"/*.log | grep 'uepoll-preload:' | head -5
cat "$tmp"/*.log | grep -Eq 'uepoll-preload: .*instances=[1-9]' ||
	fail "$which: no uepoll instance in the stats"
if [ "$which" = nginx ]; then
	"run_$which" "$run --stats --roundrobin --"
	echo "$which: preloaded run with --roundrobin ok"
fi
exit 0
