#!/usr/bin/env bash
# Model-check the protocols in models/*.pml with spin.  Each model must verify
# with no error, and each of its mutants (a known-wrong variant, selected with
# -DMUTANT_*) must be caught.  Exit 0 iff all of that holds.
set -euo pipefail
cd "$(dirname "$0")"
command -v spin >/dev/null || { echo "spin not installed: skip"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
verify() { # model define -> prints errors count
	local model=$1 def=$2 flags
	# A model may add pan options on a line "PAN_FLAGS: ..." (xmirror.pml:
	# -E, its final process checks that no live process waits for ever).
	flags=$(sed -n 's/.*PAN_FLAGS: *\([^*]*\).*/\1/p' "$model" | head -n1)
	(cd "$work" && rm -f pan* && spin $def -a "$OLDPWD/$model" >/dev/null &&
		cc -O2 -DSAFETY -o pan pan.c && ./pan -m200000 $flags 2>&1) >"$work/out" || true
	sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$work/out" | head -n1
}
for m in *.pml; do
	e=$(verify "$m" "")
	states=$(sed -n 's/^ *\([0-9e+.]*\) states, stored.*/\1/p' "$work/out" | head -n1)
	if [ "$e" = 0 ]; then
		echo "model $m: verified ($states states)"
	else
		echo "model $m: FAILED"; cat "$work/out"; fail=1
	fi
	for mut in $(grep -o 'MUTANT_[A-Z_]*' "$m" | sort -u); do
		e=$(verify "$m" "-D$mut")
		if [ -n "$e" ] && [ "$e" != 0 ]; then
			echo "model $m -D$mut: caught, as it must be"
		else
			echo "model $m -D$mut: NOT caught: the model cannot fail"; fail=1
		fi
	done
done
exit $fail
