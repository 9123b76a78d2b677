#!/usr/bin/env bash
# Tests the installed C library, as a C user gets it: scripts/install-c.sh into a scratch
# PREFIX, then checks the layout (libstrata.so.X.Y.Z with SONAME libstrata.so.X, the two links,
# libstrata.a, strata.h, strata.pc), and compiles the C API's test program
# (crates/strata-c/tests/c/*.c) with nothing but `pkg-config --cflags --libs strata` against the
# install, once with the shared library (rpath into PREFIX; the program must need
# libstrata.so.X and load it from there) and once with the static one (pkg-config --static's
# Libs.private), and runs both.
#   env: PROFILE (release, as install-c.sh; dev reuses the tests' debug build), CC (cc)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cc=${CC:-cc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
LDCONFIG=0 scripts/install-c.sh "$prefix"
lib=$prefix/lib

fail() { echo "test-c-install.sh: $*" >&2; exit 1; }
real=$(cd "$lib" && echo libstrata.so.*.*.*)
[ -f "$lib/$real" ] || fail "no libstrata.so.X.Y.Z in $lib"
major=${real#libstrata.so.}
major=${major%%.*}
[ "$(readlink "$lib/libstrata.so.$major")" = "$real" ] || fail "libstrata.so.$major does not link to $real"
[ "$(readlink "$lib/libstrata.so")" = "libstrata.so.$major" ] || fail "libstrata.so does not link to libstrata.so.$major"
[ -f "$lib/libstrata.a" ] || fail "no libstrata.a in $lib"
[ -f "$prefix/include/strata.h" ] || fail "no strata.h in $prefix/include"
soname=$(readelf -d "$lib/$real" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libstrata.so.$major" ] || fail "SONAME of $real is '$soname', not libstrata.so.$major"
echo "test-c-install.sh: $real has SONAME $soname"

export PKG_CONFIG_PATH=$lib/pkgconfig
version=$(pkg-config --modversion strata)
[ "$real" = "libstrata.so.$version" ] || fail "strata.pc says version $version, the library is $real"
# Every C file of the C API's test (strata_test.c's main calls into the others).
sources=("$root"/crates/strata-c/tests/c/*.c)
flags=(-std=c99 -Wall -Wextra -Werror -pedantic)

# Shared: only pkg-config's flags, plus an rpath to the scratch prefix.
read -ra cflags <<<"$(pkg-config --cflags strata)"
read -ra libs <<<"$(pkg-config --libs strata)"
"$cc" "${flags[@]}" "${cflags[@]}" "${sources[@]}" -o "$work/shared" "${libs[@]}" \
  -Wl,-rpath,"$lib"
needed=$(readelf -d "$work/shared" | sed -n 's/.*(NEEDED).*\[\(libstrata[^]]*\)\]/\1/p')
[ "$needed" = "$soname" ] || fail "the program needs '$needed', not $soname"
loaded=$(ldd "$work/shared" | sed -n "s/.*$soname => \([^ ]*\).*/\1/p")
[ "$loaded" = "$lib/$soname" ] || fail "the program loads '$loaded', not $lib/$soname"
mkdir "$work/db-shared"
"$work/shared" "$work/db-shared" | tee "$work/out"
grep -q "checks passed" "$work/out" || fail "the shared-library program did not pass"

# Static: libstrata.a and the system libraries of pkg-config --static (Libs.private).
static_libs=()
for l in $(pkg-config --static --libs-only-l strata); do
  [ "$l" = -lstrata ] || static_libs+=("$l")
done
"$cc" "${flags[@]}" "${cflags[@]}" "${sources[@]}" -o "$work/static" "$lib/libstrata.a" \
  "${static_libs[@]}"
if readelf -d "$work/static" | grep -q 'NEEDED.*libstrata'; then fail "the static program needs libstrata.so"; fi
mkdir "$work/db-static"
"$work/static" "$work/db-static" | tee "$work/out"
grep -q "checks passed" "$work/out" || fail "the static-library program did not pass"
echo "test-c-install.sh: ok (pkg-config strata $version, shared and static)"
