#!/usr/bin/env bash
# Mutation testing (issue 36): does the suite catch what the models catch?
# Each mutation in tests/mutations/*.txt is a one-line change to the library
# (named MODEL.MUTANT after the spin model mutant it is the C twin of, where
# it is one; see tests/mutations/README.md).
# For each: the library is built with it (build-mutate/, from a copy of the
# tree), the tests the line names are run, and the mutation is CAUGHT iff
# one of them fails and fails again alone (so that load cannot pass for a
# catch); else it SURVIVES.  The tree itself is never changed.
#   scripts/mutate.sh [NAME...]      (default: every mutation)
#   scripts/mutate.sh --check        (no build: every model mutant has an
#                                     entry, every entry still applies)
# MUTATE_TIMEOUT: per test, seconds (default 60).  Exit status 0 iff every
# mutation run is caught; 2 if a mutation no longer applies (its text is
# not found exactly once, or it does not build: the list must follow the
# code).
set -euo pipefail
# (No "printf | grep -q" under pipefail: grep's early exit can kill printf
# with SIGPIPE and fail the pipeline though it matched: here-strings.)
cd "$(dirname "$0")/.."
top=$PWD
check=0
if [ "${1:-}" = --check ]; then
	check=1
	shift
fi

# The list: NAME @@ FILE @@ OLD @@ NEW @@ TESTS, or NAME @@ NONE @@ WHY.
trim() {
	local s=$1
	s=${s#"${s%%[![:space:]]*}"}
	printf '%s' "${s%"${s##*[![:space:]]}"}"
}
declare -a names=() files=() olds=() news=() tests=() none=()
US=$'\x1f'
list=tests/mutations
while IFS= read -r line; do
	case $line in '#'* | '') continue ;; esac
	f=()
	while [[ $line == *' @@ '* ]]; do
		f+=("$(trim "${line%%' @@ '*}")")
		line=${line#*' @@ '}
	done
	f+=("$(trim "$line")")
	if [ ${#f[@]} -eq 3 ] && [ "${f[1]}" = NONE ]; then
		none+=("${f[0]}")
		continue
	fi
	n=${#f[@]}
	if [ "$n" -lt 5 ] || [ $((n % 2)) -eq 0 ]; then
		echo "$list: not NAME, FILE, OLD/NEW pairs, TESTS: ${f[0]}" >&2
		exit 2
	fi
	# More than one OLD/NEW pair (a twin that moves a step: two sites):
	# kept joined by the unit separator, applied in order.
	o="" w=""
	for ((k = 2; k < n - 1; k += 2)); do
		o+="${o:+$US}${f[$k]}"
		w+="${w:+$US}${f[$((k + 1))]}"
	done
	names+=("${f[0]}"); files+=("${f[1]}"); olds+=("$o")
	news+=("$w"); tests+=("${f[$((n - 1))]}")
done < <(cat tests/mutations/*.txt)

# Each OLD's text found exactly once in FILE (a copy): replaced by its
# NEW, pair after pair.
apply() { # file olds news
	local -a os ns
	local k
	IFS=$US read -r -a os <<<"$2"
	IFS=$US read -r -a ns <<<"$3"
	for k in "${!os[@]}"; do
		OLD=$(printf '%b' "${os[$k]}") NEW=$(printf '%b' "${ns[$k]:-}") \
			perl -0pi -e '$n = () = /\Q$ENV{OLD}\E/g; die "found $n times\n" if $n != 1;
				s/\Q$ENV{OLD}\E/$ENV{NEW}/' "$1" 2>/dev/null || return 1
	done
}

if [ "$check" = 1 ]; then
	bad=0
	all=$(printf '%s\n' "${names[@]}" "${none[@]}")
	dup=$(printf '%s\n' "$all" | sort | uniq -d)
	[ -z "$dup" ] || { echo "listed twice: $dup"; bad=1; }
	mutants=$(cd models && for m in *.pml; do
		grep -o 'MUTANT_[A-Z_]*' "$m" | sort -u | sed "s/^MUTANT_/${m%.pml}./"; done)
	for m in $mutants; do
		grep -qxF "$m" <<<"$all" || { echo "no twin listed: $m"; bad=1; }
	done
	for n in $(printf '%s\n' "$all" | grep -F .); do
		grep -qxF "$n" <<<"$mutants" || { echo "no such model mutant: $n"; bad=1; }
	done
	tmp=$(mktemp)
	for i in "${!names[@]}"; do
		if ! cp "${files[$i]}" "$tmp" 2>/dev/null || ! apply "$tmp" "${olds[$i]}" "${news[$i]}"; then
			echo "STALE ${names[$i]}: its text in ${files[$i]} is not found exactly once"
			bad=1
		fi
	done
	rm -f "$tmp"
	echo "mutations: ${#names[@]}, no twin: ${#none[@]}, model mutants: $(echo $mutants | wc -w)"
	exit $bad
fi

scripts/deps.sh build-essential cmake pkg-config liburcu-dev >/dev/null
work=$top/build-mutate
tree=$work/tree
bld=$work/build
tmo=${MUTATE_TIMEOUT:-60}
mkdir -p "$work" "$tree"
# A copy of the files git knows or would (not the ignored), built once
# without mutation.  Only files whose text differs are copied (with a new
# time), so that the build stays incremental and never trusts a time.
files_now=$(git ls-files --cached --others --exclude-standard)
while IFS= read -r f; do
	cmp -s "$f" "$tree/$f" 2>/dev/null || cp --parents "$f" "$tree"
done <<<"$files_now"
# (and files no longer there: removed or renamed)
(cd "$tree" && find . -type f | sed 's|^\./||') | while IFS= read -r f; do
	grep -qxF "$f" <<<"$files_now" || rm -f "$tree/$f"
done
cmake -S "$tree" -B "$bld" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$bld" -j"$(nproc)" >/dev/null
# ctest's --timeout is only a default (a test's own TIMEOUT wins, 300 s for
# most): cap them all at MUTATE_TIMEOUT in this build's test files.
find "$bld" -name CTestTestfile.cmake -exec \
	sed -i -E "s/TIMEOUT \"[0-9.]+\"/TIMEOUT \"$tmo\"/g" {} +
# The build's targets (a test's name is its program's, or not a target).
alltargets=$(cmake --build "$bld" --target help | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p')

want=("$@")
caught=0 survived=0 stale=0 total=0
surv=()
for i in "${!names[@]}"; do
	name=${names[$i]} file=${files[$i]}
	if [ ${#want[@]} -gt 0 ] && ! grep -qxF "$name" <<<"$(printf '%s\n' "${want[@]}")"; then
		continue
	fi
	total=$((total + 1))
	cp "$top/$file" "$tree/$file"
	if ! apply "$tree/$file" "${olds[$i]}" "${news[$i]}"; then
		echo "STALE    $name: its text in $file is not found exactly once"
		stale=$((stale + 1))
		cp "$top/$file" "$tree/$file"
		continue
	fi
	# Build the library and only the named tests.
	mapfile -t tl < <(ctest --test-dir "$bld" -N -R "${tests[$i]}" |
		sed -n 's/^ *Test *#[0-9]*: \(.*\)$/\1/p')
	targets=()
	for t in "${tl[@]}"; do
		if grep -qxF "$t" <<<"$alltargets"; then
			targets+=("$t")
		else
			targets=(all) # a test of another kind (a script, the preload)
			break
		fi
	done
	# A mutation that does not build is no catch: the list must change.
	if ! cmake --build "$bld" -j"$(nproc)" --target uepoll_static "${targets[@]}" \
		>"$work/$name.build.log" 2>&1; then
		echo "STALE    $name: it does not build ($work/$name.build.log)"
		stale=$((stale + 1))
		cp "$top/$file" "$tree/$file"
		continue
	fi
	failed=()
	if ! ctest --test-dir "$bld" -R "${tests[$i]}" -j"$(nproc)" --timeout "$tmo" \
		>"$work/$name.log" 2>&1; then
		mapfile -t failed < <(sed -n 's/^.*Test *#[0-9]*: \([^ ]*\) .*\*\*\*.*$/\1/p' "$work/$name.log")
	fi
	by=""
	for t in "${failed[@]}"; do
		if ! ctest --test-dir "$bld" -R "^$t\$" --timeout "$tmo" >/dev/null 2>&1; then
			by=$t
			break
		fi
	done
	if [ -n "$by" ]; then
		echo "CAUGHT   $name: by $by"
		caught=$((caught + 1))
	else
		echo "SURVIVES $name (${tests[$i]})${failed[*]:+: failed only beside others: ${failed[*]}}"
		survived=$((survived + 1))
		surv+=("$name")
	fi
	cp "$top/$file" "$tree/$file"
done
# The tree as it was (the next run rebuilds from it).
cmake --build "$bld" -j"$(nproc)" >/dev/null 2>&1 || true
echo "mutations: $total, caught $caught, survived $survived, stale $stale (no twin: ${#none[@]})"
[ ${#surv[@]} -eq 0 ] || echo "survivors: ${surv[*]}"
[ "$stale" -eq 0 ] || exit 2
[ "$survived" -eq 0 ]
