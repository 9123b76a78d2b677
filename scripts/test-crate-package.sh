#!/usr/bin/env bash
# Tests the crates as crates.io would get them: `cargo package` makes the .crate files of
# strata-kv and strata-kv-cli, each must be under crates.io's 10 MB, and both are unpacked into a
# workspace of their own in target/crate-smoke, with a fresh project, `app`, that depends on
# `strata-kv = "0.1"` as a user's project does (crates.io's strata-kv patched to the unpacked
# one). Built there: the engine from its package, the CLI from its package against it, and the
# app, which runs README.md's Rust example: the first ```rust block, taken at test time so the
# check follows the README, with rustdoc's hidden-line `# ` prefixes removed, wrapped in main as
# rustdoc wraps a doctest, and its /tmp paths moved to a scratch directory. The example names
# the library `strata::`, so this also checks that the package strata-kv provides the crate
# `strata`. The packaged `strata` command then puts and gets a key.
# Builds share the workspace's target directory (the workspace's Cargo.lock is copied in), so
# only the two packaged crates are compiled again.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}
case "$target" in /*) ;; *) target=$root/$target ;; esac
export CARGO_TARGET_DIR=$target
fail() { echo "test-crate-package.sh: $*" >&2; exit 1; }

version=$(cargo pkgid -p strata-kv)
version=${version##*[#@]}
# --allow-dirty: the check is of the tree as it is, committed or not. --no-verify: cargo's own
# verification builds strata-kv-cli against strata-kv taken from a local registry, as a registry
# package, and cargo takes a registry package's name and version for its content: with the
# version unchanged, it reuses the extraction ($CARGO_HOME/registry/src) and the build (target/)
# of an earlier run, so the CLI was "verified" against an old engine. The builds below stand in
# for it, from the .crate files themselves, as path packages (rebuilt when they change).
# strata-kv-cli's `cluster` feature depends on strata-server, which is not published: the package
# is made from the CLI's manifest without the lines marked `# not published` (the feature stays,
# empty, so the packaged code's cfg names a declared feature), then the files are put back.
cli_manifest=crates/strata-cli/Cargo.toml
mkdir -p "$target"
cp "$cli_manifest" "$target/strata-cli-Cargo.toml.kept"
cp Cargo.lock "$target/Cargo.lock.kept"
restore() { cp "$target/strata-cli-Cargo.toml.kept" "$cli_manifest"; cp "$target/Cargo.lock.kept" Cargo.lock; }
trap restore EXIT
sed -i -e 's/^\([a-z-]*\) = \["dep:[a-z-]*"\] # not published$/\1 = []/' -e '/# not published$/d' "$cli_manifest"
cargo package -p strata-kv -p strata-kv-cli --no-verify --allow-dirty 2>&1 | grep -v '^warning: ignoring test'
restore
trap - EXIT
for crate in strata-kv strata-kv-cli; do
  file=$target/package/$crate-$version.crate
  size=$(stat -c %s "$file")
  echo "test-crate-package.sh: $(basename "$file"): $size bytes"
  [ "$size" -lt 10000000 ] || fail "$file is over crates.io's 10 MB"
done

smoke=$target/crate-smoke
rm -rf "$smoke"
mkdir -p "$smoke/app/src" "$smoke/scratch"
for crate in strata-kv strata-kv-cli; do
  tar xzf "$target/package/$crate-$version.crate" -C "$smoke"
done
cat >"$smoke/Cargo.toml" <<TOML
[workspace]
resolver = "2"
members = ["app", "strata-kv-cli-$version"]

[patch.crates-io]
strata-kv = { path = "strata-kv-$version" }
TOML
cat >"$smoke/app/Cargo.toml" <<TOML
[package]
name = "strata-kv-smoke"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
strata-kv = "${version%.*}"
TOML
# The workspace's versions of every dependency, so that their builds are reused.
cp Cargo.lock "$smoke/Cargo.lock"

# README's first Rust block; rustdoc's hidden lines ("# code", "#") shown, "##" unescaped.
code=$(awk '/^```rust/ { f = 1; next } f && /^```/ { exit } f' README.md |
  sed -E -e 's/^([[:space:]]*)# /\1/' -e 's/^([[:space:]]*)#$/\1/' -e 's/^([[:space:]]*)##/\1#/' |
  sed -e "s|\"/tmp/|\"$smoke/scratch/|g")
[ -n "$code" ] || fail "no \`\`\`rust block in README.md"
{
  echo '#![allow(unused)]'
  if grep -q 'fn main' <<<"$code"; then
    echo "$code"
  elif tail -n 1 <<<"$code" | grep -qE '\(\(\)\)[[:space:]]*;?[[:space:]]*$'; then
    # As rustdoc wraps a doctest that ends in Ok(()): `?` works, an error fails the run.
    echo 'fn main() {'
    echo 'fn _inner() -> core::result::Result<(), impl core::fmt::Debug> {'
    echo "$code"
    echo '}'
    echo '_inner().unwrap()'
    echo '}'
  else
    echo 'fn main() {'
    echo "$code"
    echo '}'
  fi
} >"$smoke/app/src/main.rs"

cargo build --manifest-path "$smoke/Cargo.toml" --workspace
"$target/debug/strata-kv-smoke"
echo "test-crate-package.sh: README's Rust example ran against the packaged strata-kv $version"
strata=$target/debug/strata
"$strata" put --db="$smoke/scratch/cli-db" --create-if-missing hello world
got=$("$strata" get --db="$smoke/scratch/cli-db" hello)
[ "$got" = world ] || fail "the packaged strata get printed '$got', not world"
echo "test-crate-package.sh: the packaged strata command put and got a key"
