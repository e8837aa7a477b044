#!/bin/sh
# pfuzz.sh UEPOLL_RUN PFUZZ_BIN SEEDS_FROM SEEDS_COUNT STEPS [OPS-MASK]
#
# The preload's differential fuzzer (issue 33): for each seed, runs
# `PFUZZ_BIN SEED STEPS OFF` natively and under `UEPOLL_RUN --stats --`;
# the exit statuses and the outputs must be the same.  On the first
# difference it minimises (the fewest steps that still differ, then every
# kind switched off and every step skipped that the difference does not
# need), prints the seed, the steps, the kinds off, the steps skipped, the
# diff and the minimal sequence, appends a reproducer line to
# $PFUZZ_REPRO (pfuzz_repro.txt in the current directory by default) and
# exits 1.
#
# OPS-MASK: the kinds switched off (`PFUZZ_BIN kinds` lists them), as a
# comma-separated list, or a file naming one per line (pfuzz_known.txt:
# the first word of each line that is not a comment).  PFUZZ_SKIP: steps
# not made (a reproducer's).  PFUZZ_SECONDS: stop starting seeds after
# that long (scripts/fuzz.sh --preload; the CI run has no time limit of
# its own, only SEEDS_COUNT).  UEPOLL_SANITIZE non-empty: skip (77), as
# run_test.sh does (an LD_PRELOAD cannot go with a sanitizer runtime).
#
# The preload must be seen at work: some seed's run must report uepoll
# instances or eventfds on its --stats line.
set -u
if [ -n "${UEPOLL_SANITIZE:-}" ]; then
	echo "SKIP: LD_PRELOAD cannot be combined with the $UEPOLL_SANITIZE sanitizer runtime"
	exit 77
fi
if [ $# -lt 5 ] || [ $# -gt 6 ]; then
	echo "usage: pfuzz.sh UEPOLL_RUN PFUZZ_BIN SEEDS_FROM SEEDS_COUNT STEPS [OPS-MASK]" >&2
	exit 2
fi
run=$1 bin=$2 from=$3 count=$4 steps=$5 mask=${6:--}
repro=${PFUZZ_REPRO:-pfuzz_repro.txt}
skip0=${PFUZZ_SKIP:--}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# The kinds off: a file's first words, or the list as given.
if [ -f "$mask" ]; then
	mask=$(sed -e 's/#.*//' "$mask" | awk 'NF { printf "%s%s", s, $1; s = "," }')
	[ -n "$mask" ] || mask=-
fi
"$bin" 1 0 "$mask" >/dev/null || { echo "FAIL: bad kind list '$mask'"; exit 2; }

# run SEED STEPS OFF SKIP: both worlds; 0 if they agree.  The outputs are
# left in $tmp/n.out and $tmp/p.out, the statuses in $st1 and $st2.
run() {
	"$bin" "$1" "$2" "$3" "$4" </dev/null >"$tmp/n.out" 2>"$tmp/n.err"
	st1=$?
	"$run" --stats -- "$bin" "$1" "$2" "$3" "$4" </dev/null >"$tmp/p.out" 2>"$tmp/p.err"
	st2=$?
	[ $st1 -eq $st2 ] && cmp -s "$tmp/n.out" "$tmp/p.out"
}

# The step of the first line that differs (the last "sN kind" line before
# it), or the number of steps if the difference is in the end's dump.
first_step() {
	awk -v steps="$1" '
		NR == FNR { a[FNR] = $0; na = FNR; next }
		{ b[FNR] = $0; nb = FNR }
		END {
			s = -1
			n = na > nb ? na : nb
			for (i = 1; i <= n; i++) {
				if (i <= na && a[i] ~ /^s[0-9]+ /)
					s = substr(a[i], 2, index(a[i], " ") - 2)
				if (a[i] != b[i]) {
					if (a[i] ~ /^end / || a[i] == "done" || s < 0)
						print steps
					else
						print s + 1
					exit
				}
			}
			print steps
		}' "$tmp/n.out" "$tmp/p.out"
}

add() { # add LIST ITEM
	if [ "$1" = - ]; then echo "$2"; else echo "$1,$2"; fi
}

minimise() { # seed steps off skip: sets m_steps, m_off, m_skip
	seed=$1 m_steps=$2 m_off=$3 m_skip=$4
	run "$seed" "$m_steps" "$m_off" "$m_skip"
	# 1. Steps: up to the first step that differs, then fewer while the
	# end's dump still shows a difference.
	m_steps=$(first_step "$m_steps")
	lo=0 hi=$m_steps
	while [ $((hi - lo)) -gt 1 ]; do
		mid=$(((lo + hi) / 2))
		if run "$seed" "$mid" "$m_off" "$m_skip"; then lo=$mid; else hi=$mid; fi
	done
	m_steps=$hi
	# 2. Every kind the difference does not need, off.
	for k in $("$bin" kinds); do
		case ",$m_off," in *",$k,"*) continue ;; esac
		try=$(add "$m_off" "$k")
		run "$seed" "$m_steps" "$try" "$m_skip" || m_off=$try
	done
	# 3. Every step it does not need, skipped (twice: a skip can make
	# another step unneeded).
	for pass in 1 2; do
		run "$seed" "$m_steps" "$m_off" "$m_skip"
		for s in $(sed -n 's/^s\([0-9]*\) .*/\1/p' "$tmp/n.out"); do
			try=$(add "$m_skip" "$s")
			run "$seed" "$m_steps" "$m_off" "$try" || m_skip=$try
		done
	done
	run "$seed" "$m_steps" "$m_off" "$m_skip"
}

start=$(date +%s)
used=0 done_seeds=0
seed=$from
end=$((from + count))
while [ "$seed" -lt "$end" ]; do
	if [ -n "${PFUZZ_SECONDS:-}" ] && [ $(($(date +%s) - start)) -ge "$PFUZZ_SECONDS" ]; then
		break
	fi
	if ! run "$seed" "$steps" "$mask" "$skip0" || [ $st1 -ne 0 ]; then
		if [ $st1 -ne 0 ]; then
			# pfuzz itself must never fail (142: its watchdog, a
			# call that blocked).
			echo "FAIL: seed $seed: the native run's exit status is $st1"
			tail -n 5 "$tmp/n.out" "$tmp/n.err"
			echo "reproducer: $bin $seed $steps $mask $skip0"
			exit 1
		fi
		echo "DIVERGENCE: seed $seed, $steps steps (exit status $st1 native, $st2 preloaded); minimising..."
		minimise "$seed" "$steps" "$mask" "$skip0"
		if run "$seed" "$m_steps" "$m_off" "$m_skip"; then
			echo "(the minimised run agrees: the difference is not deterministic)"
			m_steps=$steps m_off=$mask m_skip=$skip0
			run "$seed" "$m_steps" "$m_off" "$m_skip"
		fi
		line="PFUZZ_SKIP=$m_skip $0 $run $bin $seed 1 $m_steps $m_off"
		echo "seed $seed steps $m_steps off $m_off skip $m_skip"
		echo "exit status: $st1 native, $st2 preloaded"
		echo "--- native / +++ preloaded:"
		diff -u "$tmp/n.out" "$tmp/p.out" | tail -n +3
		echo "minimal sequence (native output):"
		cat "$tmp/n.out"
		echo "preloaded stderr:"
		head -n 20 "$tmp/p.err"
		echo "reproducer: $line"
		echo "$line" >>"$repro"
		exit 1
	fi
	grep -Eq 'uepoll-preload: .*(instances|eventfds)=[1-9]' "$tmp/p.err" && used=$((used + 1))
	done_seeds=$((done_seeds + 1))
	seed=$((seed + 1))
done
echo "pfuzz: $done_seeds seeds ($from..$((from + done_seeds - 1))) x $steps steps agree, off: $mask, $(($(date +%s) - start)) s"
if [ "$done_seeds" -gt 0 ] && [ "$used" -eq 0 ]; then
	echo "FAIL: uepoll not used (no --stats line with instances or eventfds)"
	exit 1
fi
exit 0
