#!/bin/sh
# The bounded CI run of a libFuzzer target: fuzz_test.sh BIN SRC_CORPUS WORKDIR SECONDS
# New inputs go to WORKDIR/corpus (the seed corpus in the tree is only read),
# a failing input to WORKDIR/crash-*.  Exit status: the fuzzer's (0: no
# divergence, crash or leak found in SECONDS).
set -eu
bin=$1 seeds=$2 work=$3 secs=$4
mkdir -p "$work/corpus"
exec "$bin" -max_total_time="$secs" -timeout=20 -print_final_stats=1 \
	-artifact_prefix="$work/" "$work/corpus" "$seeds"
