#!/usr/bin/env bash
# Model-check the protocols in models/*.pml with spin.  Each model must verify
# with no error, and each of its mutants (a known-wrong variant, selected with
# -DMUTANT_*) must be caught.  Exit 0 iff all of that holds.
# The checks (a model, or one of its mutants) run $MODELS_JOBS at a time
# (default: the number of CPUs), each printing its line when it ends.
set -euo pipefail
cd "$(dirname "$0")"
command -v spin >/dev/null || { echo "spin not installed: skip"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
jobs=${MODELS_JOBS:-$(nproc)}

# One check in its own directory: model, define ("" for the model itself).
# Prints its verdict line; returns 0 iff it is as it must be.
check() {
	local model=$1 def=$2 dir flags e states t0=$SECONDS
	dir=$(mktemp -d -p "$work")
	# A model may add pan options on a line "PAN_FLAGS: ..." (xmirror.pml:
	# -E, its final process checks that no live process waits for ever).
	flags=$(sed -n 's/.*PAN_FLAGS: *\([^*]*\).*/\1/p' "$model" | head -n1)
	# -O2, but -O0 for a large transition function (pan.m): GCC spends
	# half a minute optimising xmirror.pml's, ten times its search.
	(cd "$dir" && spin $def -a "$OLDPWD/$model" >/dev/null &&
		opt=-O2 && { [ "$(wc -c <pan.m)" -le 400000 ] || opt=-O0; } &&
		cc $opt -DSAFETY -o pan pan.c 2>&1 && ./pan -m200000 $flags 2>&1) >"$dir/out" || true
	e=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$dir/out" | head -n1)
	if [ -z "$def" ]; then
		states=$(sed -n 's/^ *\([0-9e+.]*\) states, stored.*/\1/p' "$dir/out" | head -n1)
		if [ "$e" = 0 ]; then
			echo "model $model: verified ($states states, $((SECONDS - t0)) s)"
		else
			echo "model $model: FAILED"; cat "$dir/out"; rm -rf "$dir"; return 1
		fi
	elif [ -n "$e" ] && [ "$e" != 0 ]; then
		echo "model $model $def: caught, as it must be ($((SECONDS - t0)) s)"
	else
		echo "model $model $def: NOT caught: the model cannot fail"; rm -rf "$dir"; return 1
	fi
	rm -rf "$dir"
}

# Every check: the models first (a full search each, the long ones), then
# the mutants (each stops at its first error).
list=()
for m in *.pml; do
	list+=("$m|")
done
for m in *.pml; do
	for mut in $(grep -o 'MUTANT_[A-Z_]*' "$m" | sort -u); do
		list+=("$m|-D$mut")
	done
done
fail=0
running=0
for item in "${list[@]}"; do
	check "${item%%|*}" "${item#*|}" &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait -n || fail=1
		running=$((running - 1))
	fi
done
while [ "$running" -gt 0 ]; do
	wait -n || fail=1
	running=$((running - 1))
done
exit $fail
