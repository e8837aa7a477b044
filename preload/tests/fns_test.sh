#!/bin/sh
# fns_test.sh FNS_H PRELOAD_SO: the names libuepoll-preload.so exports are
# exactly THE LIST in preload/fns.h (PRELOAD_LIBC, PRELOAD_ALIASES) and the execl family
# (wrappers of wrappers, with no libc definition of their own to look up):
# a name added to one and not the other fails here.
set -eu
fns=$1 so=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
{
	sed -n 's/^[[:space:]]*X([^,]*,[[:space:]]*\([A-Za-z0-9_]*\),.*/\1/p' "$fns"
	# PRELOAD_ALIASES: A(alias, name)
	sed -n 's/^[[:space:]]*A(\([A-Za-z0-9_]*\),.*/\1/p' "$fns"
	printf '%s\n' execl execlp execle
} | sort -u >"$tmp/list"
nm -D --defined-only "$so" | awk '$2 ~ /^[TtWi]$/ { print $3 }' |
	sed 's/@.*//' | sort -u >"$tmp/exported"
if ! diff -u "$tmp/list" "$tmp/exported"; then
	echo "FAIL: preload.map and fns.h disagree (- only in fns.h, + only exported)"
	exit 1
fi
echo "ok: $(wc -l <"$tmp/list") names"
