#!/usr/bin/env bash
# The soak test (tests/t_soak.c) for SECONDS (default 600): a random concurrent workload of ctl, nesting, closes, writes, reads
# and waits, checked for balance and lost wakeups (see the test's header).
#   scripts/soak.sh [SECONDS]
# SOAK_BUILD=default|tsan|asan picks the build (default: RelWithDebInfo in
# build-test/); UEPOLL_TEST_SEED replays a seed.  Exit status 0 iff it held.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}
case ${SOAK_BUILD:-default} in
default) dir=build-test; opts=(-DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
asan) dir=build-asan; opts=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DUEPOLL_SANITIZE=address) ;;
tsan) dir=build-tsan; opts=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DUEPOLL_SANITIZE=thread) ;;
*) echo "SOAK_BUILD: default, asan or tsan" >&2; exit 2 ;;
esac
scripts/deps.sh build-essential cmake pkg-config clang libclang-rt-14-dev liburcu-dev
cmake -S . -B "$dir" -DUEPOLL_WERROR=ON "${opts[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)" --target t_soak >/dev/null
echo "== soak ${secs}s, build $dir"
UEPOLL_SOAK_SECONDS=$secs exec "$dir/tests/t_soak"
