#!/usr/bin/env bash
# Builds the C library (crates/strata-c, release profile) and installs it under PREFIX
# (default /usr/local):
#   include/strata.h
#   lib/libstrata.so.X.Y.Z              the shared library, SONAME libstrata.so.X (crates/strata-c/build.rs)
#   lib/libstrata.so.X -> libstrata.so.X.Y.Z   what programs load at run time
#   lib/libstrata.so -> libstrata.so.X         what -lstrata finds at link time
#   lib/libstrata.a
#   lib/pkgconfig/strata.pc             from crates/strata-c/strata.pc.in: -lstrata, and for
#                                       --static the system libraries libstrata.a needs
# then: cc prog.c $(pkg-config --cflags --libs strata) (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig if
# PREFIX is not one pkg-config searches; the loader finds libstrata.so.X in PREFIX/lib after
# ldconfig, or with -Wl,-rpath / LD_LIBRARY_PATH).
#   scripts/install-c.sh [PREFIX]
#   env: DESTDIR    staged install: files go to DESTDIR/PREFIX, strata.pc still says PREFIX
#        LIBDIR     library directory, relative to PREFIX or absolute (default lib; e.g.
#                   lib/x86_64-linux-gnu or lib64)
#        INCLUDEDIR header directory, relative to PREFIX or absolute (default include)
#        PROFILE    cargo profile to build (default release; CI uses dev to reuse its debug build)
#        STRIP=1    strip debug information from the installed libraries (the release profile
#                   keeps line tables: ~28 MB shared, ~70 MB static, unstripped)
#        LDCONFIG=0 skip ldconfig, which otherwise runs after an install by root without DESTDIR
#                   (on Linux), so the loader's cache knows the new library at once
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-/usr/local}
case "$prefix" in
  /*) ;;
  *) prefix=$PWD/$prefix ;;
esac
prefix=${prefix%/}
abs() { case "$1" in /*) echo "$1" ;; *) echo "$prefix/$1" ;; esac; }
libdir=$(abs "${LIBDIR:-lib}")
includedir=$(abs "${INCLUDEDIR:-include}")
profile=${PROFILE:-release}
destdir=${DESTDIR:-}

# The version is strata-c's (the workspace's): `cargo pkgid` ends in #0.1.0 or #strata-c@0.1.0.
pkgid=$(cargo pkgid -p strata-c)
version=${pkgid##*[#@]}
major=${version%%.*}
case "$version" in
  [0-9]*.[0-9]*.[0-9]*) ;;
  *) echo "install-c.sh: cannot read strata-c's version from '$pkgid'" >&2; exit 1 ;;
esac

# One build that also prints the static library's system libraries (cargo replays the note
# when the build is already fresh). The artifacts' paths come from cargo's JSON messages, so
# CARGO_TARGET_DIR and build.target-dir are honoured.
log=$(mktemp)
trap 'rm -f "$log" "$log.json"' EXIT
cargo rustc -p strata-c --lib --profile "$profile" --message-format=json-render-diagnostics \
  -- --print native-static-libs >"$log.json" 2>"$log" || { cat "$log" >&2; exit 1; }
artifact() { grep -o "\"[^\"]*/$1\"" "$log.json" | tail -1 | tr -d '"'; }
so=$(artifact libstrata.so)
static=$(artifact libstrata.a)
if [ ! -f "$so" ] || [ ! -f "$static" ]; then
  echo "install-c.sh: cargo reported no libstrata.so / libstrata.a" >&2
  exit 1
fi
libs_private=$(sed -n 's/^note: native-static-libs: //p' "$log" | tail -1)
if [ -z "$libs_private" ]; then
  libs_private="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"
  echo "install-c.sh: rustc printed no native-static-libs; using the Linux list: $libs_private" >&2
fi

real=libstrata.so.$version
install -d "$destdir$includedir" "$destdir$libdir/pkgconfig"
install -m 0644 include/strata.h "$destdir$includedir/strata.h"
install -m 0755 "$so" "$destdir$libdir/$real"
install -m 0644 "$static" "$destdir$libdir/libstrata.a"
ln -sfn "$real" "$destdir$libdir/libstrata.so.$major"
ln -sfn "libstrata.so.$major" "$destdir$libdir/libstrata.so"
if [ "${STRIP:-0}" = 1 ]; then
  strip --strip-debug "$destdir$libdir/$real" "$destdir$libdir/libstrata.a"
fi
# pkg-config's variables: the paths relative to ${prefix} where they lie under it.
pc_path() { case "$1" in "$prefix"/*) echo "\${prefix}/${1#"$prefix"/}" ;; *) echo "$1" ;; esac; }
sed -e "s|@PREFIX@|$prefix|" -e "s|@LIBDIR@|$(pc_path "$libdir")|" \
  -e "s|@INCLUDEDIR@|$(pc_path "$includedir")|" -e "s|@VERSION@|$version|" \
  -e "s|@LIBS_PRIVATE@|$libs_private|" crates/strata-c/strata.pc.in >"$destdir$libdir/pkgconfig/strata.pc"
chmod 0644 "$destdir$libdir/pkgconfig/strata.pc"

if [ -z "$destdir" ] && [ "${LDCONFIG:-1}" != 0 ] && [ "$(id -u)" = 0 ] && [ "$(uname -s)" = Linux ] &&
  command -v ldconfig >/dev/null 2>&1; then
  ldconfig || echo "install-c.sh: ldconfig failed (the libraries are installed)" >&2
fi
echo "install-c.sh: strata $version ($profile) installed in $destdir$prefix:"
echo "  $includedir/strata.h"
echo "  $libdir/{$real, libstrata.so.$major -> $real, libstrata.so -> libstrata.so.$major, libstrata.a}"
echo "  $libdir/pkgconfig/strata.pc"
