#!/usr/bin/env bash
# Packaging check, the way a distribution installs uepoll: a fresh Release
# build configured with -DCMAKE_INSTALL_PREFIX=/usr (uepoll.pc records the
# prefix at configure time, so the caller's build, configured for its own
# prefix, cannot serve), installed into a DESTDIR stage.  Against the stage,
# through pkg-config with PKG_CONFIG_SYSROOT_DIR, it checks that
#  - uepoll.pc says /usr/include and /usr/<CMake's libdir> (lib/<multiarch>
#    on Debian), and the project version;
#  - the README example compiles shared and static (pkg-config --static,
#    libuepoll.a) and both run;
#  - uepoll_version() of the installed library equals CMake's project
#    version and the installed header's UEPOLL_VERSION_* macros;
#  - the shared library exports exactly the public API, versioned, and the
#    man pages are installed;
#  - libuepoll-preload.so and uepoll-run are installed, the launcher
#    pointing at the installed library.
# Usage: scripts/check-install.sh [BUILD_DIR]
# BUILD_DIR (the caller's build) is not used; it is accepted so that the
# older calls still work.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
build=$tmp/build
stage=$tmp/stage
fail() { echo "check-install: $*"; exit 1; }

cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
	-DUEPOLL_TESTS=OFF -DUEPOLL_BENCH=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
DESTDIR=$stage cmake --install "$build" --prefix /usr >/dev/null

pc=$(find "$stage" -name uepoll.pc)
[ -n "$pc" ] || fail "no uepoll.pc installed"
export PKG_CONFIG_PATH=${pc%/uepoll.pc}
# The paths the .pc records (pkgconf prefixes variables with the sysroot).
libdir=$(PKG_CONFIG_SYSROOT_DIR='' pkg-config --variable=libdir uepoll)
includedir=$(PKG_CONFIG_SYSROOT_DIR='' pkg-config --variable=includedir uepoll)
want_libdir=/usr/$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build/CMakeCache.txt")
multiarch=$(cc -print-multiarch 2>/dev/null || true)
if [ -f /etc/debian_version ] && [ -n "$multiarch" ]; then
	[ "$want_libdir" = "/usr/lib/$multiarch" ] || fail "CMake's libdir is $want_libdir, not /usr/lib/$multiarch"
fi
[ "$libdir" = "$want_libdir" ] || fail "uepoll.pc libdir is $libdir, want $want_libdir"
[ "$includedir" = /usr/include ] || fail "uepoll.pc includedir is $includedir, want /usr/include"
[ "$PKG_CONFIG_PATH" = "$stage$libdir/pkgconfig" ] || fail "uepoll.pc installed in $PKG_CONFIG_PATH"
export PKG_CONFIG_SYSROOT_DIR=$stage
version=$(sed -n 's/^project(uepoll VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[ "$(pkg-config --modversion uepoll)" = "$version" ] || fail "uepoll.pc version is $(pkg-config --modversion uepoll), want $version"

# Shared: run against the stage's library, not an installed one.
cc "$src/examples/hello.c" $(pkg-config --cflags --libs uepoll) -pthread -o "$tmp/hello"
LD_LIBRARY_PATH=$stage$libdir ldd "$tmp/hello" | grep -q "$stage$libdir/libuepoll.so" ||
	fail "shared example does not load the stage's libuepoll.so"
out=$(LD_LIBRARY_PATH=$stage$libdir "$tmp/hello")
[ "$out" = "1 event(s), counter 3" ] || fail "shared example printed: $out"

# Static: every flag from pkg-config --static; -Bstatic makes the linker
# take the archives (libuepoll.a and its dependencies) over the .so files,
# so a missing Libs.private/Requires.private entry fails the link.
cc "$src/examples/hello.c" -Wl,-Bstatic $(pkg-config --static --cflags --libs uepoll) -Wl,-Bdynamic \
	-o "$tmp/hello-static"
if readelf -d "$tmp/hello-static" | grep -E 'NEEDED.*lib(uepoll|urcu)'; then
	fail "static example needs a shared uepoll or liburcu"
fi
out=$("$tmp/hello-static")
[ "$out" = "1 event(s), counter 3" ] || fail "static example printed: $out"

# The installed library's version, the installed header's and the project's.
cat >"$tmp/version.c" <<'EOF'
#include <stdio.h>
#include <uepoll.h>

int main(void)
{
	printf("%s %d.%d.%d\n", uepoll_version(), UEPOLL_VERSION_MAJOR,
	       UEPOLL_VERSION_MINOR, UEPOLL_VERSION_PATCH);
	return 0;
}
EOF
cc "$tmp/version.c" $(pkg-config --cflags --libs uepoll) -o "$tmp/version"
out=$(LD_LIBRARY_PATH=$stage$libdir "$tmp/version")
[ "$out" = "$version $version" ] || fail "uepoll_version() and macros: $out, want $version"

exported=$(nm -D --defined-only "$stage$libdir/libuepoll.so" | awk '$2 == "T" {print $3}' | sort)
want=$(sed -n 's/^\t\t\([a-z_0-9]*\);$/\1@@UEPOLL_0.1/p' "$src/src/libuepoll.map" | sort)
if [ "$exported" != "$want" ]; then
	echo "check-install: exported symbols differ from src/libuepoll.map:"
	diff <(echo "$want") <(echo "$exported") || true
	exit 1
fi
ls "$stage"/usr/share/man/man3/uepoll_ctl.3 "$stage"/usr/share/man/man3/uepoll_version.3 \
	"$stage"/usr/share/man/man7/uepoll.7 "$stage"/usr/share/man/man1/uepoll-run.1 >/dev/null

# The preload layer: the library in libdir, exporting libc names only (no
# uepoll_* symbol), and the launcher in bin, which by default looks for the
# library where it was configured to be installed.
pre=$stage$libdir/libuepoll-preload.so
[ -f "$pre" ] || fail "no libuepoll-preload.so in $libdir"
nm -D --defined-only "$pre" | grep -q ' uepoll_' && fail "libuepoll-preload.so exports uepoll_* symbols"
"$stage/usr/bin/uepoll-run" --help | grep -q "$libdir/libuepoll-preload.so" ||
	fail "uepoll-run does not look for $libdir/libuepoll-preload.so"
out=$("$stage/usr/bin/uepoll-run" --preload "$pre" -- sh -c 'echo $LD_PRELOAD')
[ "$out" = "$pre" ] || fail "uepoll-run set LD_PRELOAD to $out"
echo "check-install: ok (prefix /usr, libdir $libdir, version $version, pkg-config, shared, static, $(echo "$exported" | wc -l) versioned symbols, man pages, preload)"
