#!/usr/bin/env bash
# The README's test command: installs what it needs, builds uepoll three
# ways and runs the whole test suite in each:
#   build-test/  RelWithDebInfo, -Werror
#   build-asan/  AddressSanitizer + UBSan (LeakSanitizer forced on), and a
#                bounded run of the differential fuzzer (tests/fuzz/)
#   build-tsan/  ThreadSanitizer
# Every test also checks that it leaked no fd; the spin models run
# as a test too (once: they do not depend on the build).  Exit status 0 iff all pass.
# Environment: UEPOLL_TEST_SEED replays a seed; UEPOLL_TEST_ONLY=default|asan|tsan
# runs one build only.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh build-essential cmake pkg-config clang libclang-rt-14-dev spin liburcu-dev wrk valgrind strace
# The real programs: the preload's server tests and bench_quick's real group
# (skipped, not failed, where they are missing).
scripts/deps.sh nginx-light curl redis-server redis-tools memcached nodejs nghttp2-client ||
	echo "test.sh: some real programs could not be installed: their tests skip"

jobs=$(nproc)
only=${UEPOLL_TEST_ONLY:-}
status=0
total_pass=0
total_fail=0

run_build() {
	local name=$1 dir=$2 scale=$3
	shift 3
	[ -n "$only" ] && [ "$only" != "$name" ] && return 0
	echo "== $name build ($dir)"
	cmake -S . -B "$dir" -DUEPOLL_WERROR=ON -DUEPOLL_BENCH=ON "$@" >/dev/null
	cmake --build "$dir" -j"$jobs" >/dev/null
	local log="$dir/ctest.log"
	# The spin models do not depend on the build: they run once, in the
	# default build.
	local skip=()
	[ "$name" != default ] && skip=(-E '^models$')
	# LeakSanitizer on in the ASan build whatever the caller's
	# ASAN_OPTIONS say (harmless elsewhere).
	if UEPOLL_TEST_SCALE=$scale \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1" \
		ctest --test-dir "$dir" --output-on-failure -j"$jobs" "${skip[@]}" >"$log" 2>&1; then
		:
	else
		status=1
	fi
	tail -n 40 "$log" | grep -E "tests passed|Failed|\*\*\*|Not Run|Timeout" || true
	local p f
	p=$(grep -cE "Test +#[0-9]+: .* Passed" "$log" || true)
	f=$(grep -cE "Test +#[0-9]+: .*\*\*\*(Failed|Exception|Timeout)|Test +#[0-9]+: .* Failed" "$log" || true)
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
}

run_build default build-test 1 -DCMAKE_BUILD_TYPE=RelWithDebInfo
if [ -z "$only" ] || [ "$only" = default ]; then
	if scripts/check-install.sh build-test; then
		total_pass=$((total_pass + 1))
	else
		total_fail=$((total_fail + 1))
		status=1
	fi
fi
run_build asan build-asan 0.5 -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DUEPOLL_SANITIZE=address
run_build tsan build-tsan 0.5 -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DUEPOLL_SANITIZE=thread

echo "$total_pass passed, $total_fail failed"
exit $status
