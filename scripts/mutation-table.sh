#!/usr/bin/env bash
# The rows of docs/reliability.md's mutation table, from a run's log:
#   scripts/mutate.sh [NAME...] | tee LOG; scripts/mutation-table.sh LOG
# prints "| NAME | what it breaks | caught by |" for each CAUGHT line of LOG,
# "what it breaks" being the comment above the entry in tests/mutations/
# (cut at about 105 characters), so that the table says what the lists
# and the run say, and nothing of its own.  A SURVIVES line is printed
# with "survives" in the last column.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || {
	echo "usage: $0 LOG" >&2
	exit 2
}
awk '
FNR == 1 { text = "" }
FILENAME ~ /^tests\/mutations\// {
	if ($0 ~ /^#/) {
		line = $0
		sub(/^# ?/, "", line)
		text = text (text == "" ? "" : " ") line
	} else if ($0 ~ / @@ /) {
		name = $0
		sub(/ @@.*/, "", name)
		gsub(/^[ \t]+|[ \t]+$/, "", name)
		what[name] = text
		text = ""
	} else {
		text = ""
	}
	next
}
/^CAUGHT / || /^SURVIVES / {
	name = $2
	sub(/:$/, "", name)
	by = "survives"
	if ($1 == "CAUGHT")
		by = "`" $4 "`"
	w = what[name]
	# An entry that shares a comment with the one above it has none.
	if (w == "")
		w = "(see the entry above it in tests/mutations/)"
	if (length(w) > 110) {
		w = substr(w, 1, 105)
		sub(/ [^ ]*$/, "", w)
		w = w " ..."
	}
	gsub(/\|/, "\\|", w)
	printf "| %s | %s | %s |\n", name, w, by
}
' tests/mutations/*.txt "$1"
