#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# scripts/bench.sh - build uepoll and run its benchmark suite.
#
# On a fresh Debian 12 machine (as root) it installs what is missing, builds
# the project in Release mode into build-bench/, runs every scenario of
# uepoll-bench on the kernel and on uepoll, prints the tables and writes
# build-bench/results/<UTC time>/{tables.md,results.json,report.md,*.png}
# (build-bench/results/latest points to the last run).
#
#   scripts/bench.sh                 # the full suite (about 30 min on 2 cores),
#                                    # the real programs (group "real") included,
#                                    # then the preload's pipe cost (issue 20)
#   scripts/bench.sh --quick         # the smoke-test sizes (a few seconds)
#   scripts/bench.sh herd --reps 5   # any `uepoll-bench run` arguments
#
# Environment: BUILD_DIR (default build-bench), RESULTS_DIR (default
# $BUILD_DIR/results/<UTC time>), SKIP_APT=1 to never call apt-get.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build-bench}
RESULTS_DIR=${RESULTS_DIR:-$BUILD_DIR/results/$(date -u +%Y%m%dT%H%M%SZ)}

log() { printf 'bench.sh: %s\n' "$*" >&2; }

# --- 1. packages: only what is needed, only when missing --------------------
need_pkgs=(build-essential cmake gnuplot-nox)
# The library's build decides whether pkg-config / liburcu are needed.
if grep -qE 'pkg_check_modules|find_package\(PkgConfig' "$ROOT/CMakeLists.txt"; then
	need_pkgs+=(pkg-config)
fi
if grep -qi 'urcu' "$ROOT/CMakeLists.txt"; then
	need_pkgs+=(liburcu-dev)
fi

missing=()
for p in "${need_pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
if ((${#missing[@]})); then
	if [[ ${SKIP_APT:-0} == 1 ]] || ! command -v apt-get >/dev/null; then
		log "missing packages: ${missing[*]} (install them, or unset SKIP_APT)"
		exit 1
	fi
	SUDO=
	if [[ $(id -u) != 0 ]]; then
		if command -v sudo >/dev/null; then
			SUDO=sudo
		else
			log "missing packages: ${missing[*]}; run as root to install them"
			exit 1
		fi
	fi
	log "installing: ${missing[*]}"
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
	$SUDO env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends "${missing[@]}"
else
	log "packages present: ${need_pkgs[*]}"
fi

# The real programs and their clients (the "real" group: real-nginx,
# real-redis, ...), for the full suite only: a row whose program is missing
# is skipped, so a partial install still runs.
if (($# == 0)) && [[ ${SKIP_APT:-0} != 1 ]]; then
	"$ROOT/scripts/deps.sh" nginx-light redis-server redis-tools memcached \
		nodejs wrk nghttp2-client linux-perf >&2 ||
		log "some programs could not be installed: their rows are skipped"
fi

# --- 2. build ------------------------------------------------------------------
jobs=$(nproc 2>/dev/null || echo 2)
log "building into $BUILD_DIR (Release)"
cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
	-DUEPOLL_TESTS=OFF -DUEPOLL_BENCH=ON >/dev/null
cmake --build "$BUILD_DIR" -j "$jobs" --target uepoll-bench >/dev/null
BENCH="$BUILD_DIR/bench/uepoll-bench"

# --- 3. run ----------------------------------------------------------------------
mkdir -p "$RESULTS_DIR"
if [[ $(dirname "$RESULTS_DIR") == "$BUILD_DIR/results" ]]; then
	ln -sfn "$(basename "$RESULTS_DIR")" "$BUILD_DIR/results/latest"
fi
log "running: uepoll-bench run${*:+ $*} --json $RESULTS_DIR/results.json --report $RESULTS_DIR"
set +e
"$BENCH" run "$@" --json "$RESULTS_DIR/results.json" --report "$RESULTS_DIR" |
	tee "$RESULTS_DIR/tables.md"
rc=${PIPESTATUS[0]}
set -e
if ((rc != 0)); then
	log "uepoll-bench FAILED (exit $rc): see the FAIL lines above"
	exit "$rc"
fi
# --- 4. the preload's cost to a program without epoll (full suite only) ------
# (The servers it also measured are the real group's scenarios now.)
if (($# == 0)); then
	cmake --build "$BUILD_DIR" -j "$jobs" --target uepoll_preload uepoll-run pipe_cost >/dev/null
	log "running: preload/bench/bench.sh (pipe cost, native vs uepoll-run)"
	"$ROOT/preload/bench/bench.sh" "$BUILD_DIR" 5 pipe | tee "$RESULTS_DIR/preload.md"
fi
log "results in $RESULTS_DIR (tables.md, preload.md, results.json, report.md, *.png)"
