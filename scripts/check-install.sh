#!/usr/bin/env bash
# Packaging check: install a build into a scratch prefix, compile the README
# example against it with pkg-config (shared and static), run both, and check
# that the shared library exports exactly the public API, versioned.
# Usage: scripts/check-install.sh BUILD_DIR
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")/.." && pwd)
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
pc=$(dirname "$(find "$prefix" -name uepoll.pc | head -n1)")
export PKG_CONFIG_PATH=$pc
libdir=$(pkg-config --variable=libdir uepoll)
cc "$src/examples/hello.c" $(pkg-config --cflags --libs uepoll) -pthread -Wl,-rpath,"$libdir" -o "$prefix/hello"
cc "$src/examples/hello.c" $(pkg-config --cflags uepoll) "$libdir/libuepoll.a" $(pkg-config --static --libs-only-l liburcu-cds) -pthread -o "$prefix/hello-static"
out=$("$prefix/hello")
[ "$out" = "1 event(s), counter 3" ] || { echo "check-install: shared example printed: $out"; exit 1; }
out=$("$prefix/hello-static")
[ "$out" = "1 event(s), counter 3" ] || { echo "check-install: static example printed: $out"; exit 1; }
exported=$(nm -D --defined-only "$libdir/libuepoll.so" | awk '$2 == "T" {print $3}' | sort)
want=$(sed -n 's/^\t\t\([a-z_0-9]*\);$/\1@@UEPOLL_0.1/p' "$src/src/libuepoll.map" | sort)
if [ "$exported" != "$want" ]; then
	echo "check-install: exported symbols differ from src/libuepoll.map:"
	diff <(echo "$want") <(echo "$exported") || true
	exit 1
fi
ls "$prefix"/share/man/man3/uepoll_ctl.3 >/dev/null
echo "check-install: ok (pkg-config, shared, static, $(echo "$exported" | wc -l) versioned symbols, man pages)"
