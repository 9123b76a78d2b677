#!/usr/bin/env bash
# Tests the crates as crates.io would get them: `cargo package` for strata-kv and strata-kv-cli
# (which also verifies that each builds from its package, the CLI against the packaged engine),
# a size check against crates.io's 10 MB limit, then a fresh cargo project in
# target/crate-smoke that depends on the unpacked strata-kv .crate by path, the way a user's
# `strata-kv = "0.1"` does, and runs README.md's Rust example in it: the first ```rust block,
# taken at test time so the check follows the README, with rustdoc's hidden-line `# ` prefixes
# removed, wrapped in main as rustdoc wraps a doctest, and its /tmp paths moved to a scratch
# directory. The example names the library `strata::`, so this also checks that the package
# strata-kv provides the crate `strata`.
# Builds share the workspace's target directory (the project gets the workspace's Cargo.lock),
# so only strata-kv itself is compiled again.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}
case "$target" in /*) ;; *) target=$root/$target ;; esac
export CARGO_TARGET_DIR=$target

# --allow-dirty: the check is of the tree as it is, committed or not.
cargo package -p strata-kv -p strata-kv-cli --allow-dirty 2>&1 | grep -v '^warning: ignoring test'
version=$(cargo pkgid -p strata-kv)
version=${version##*[#@]}
for crate in strata-kv strata-kv-cli; do
  file=$target/package/$crate-$version.crate
  size=$(stat -c %s "$file")
  echo "test-crate-package.sh: $(basename "$file"): $size bytes"
  [ "$size" -lt 10000000 ] || { echo "test-crate-package.sh: $file is over crates.io's 10 MB" >&2; exit 1; }
done

smoke=$target/crate-smoke
rm -rf "$smoke"
mkdir -p "$smoke/app/src" "$smoke/scratch"
tar xzf "$target/package/strata-kv-$version.crate" -C "$smoke"
cat >"$smoke/app/Cargo.toml" <<EOF
[package]
name = "strata-kv-smoke"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
strata-kv = { path = "../strata-kv-$version" }

# Not a member of the repository's workspace (target/ lies inside it).
[workspace]
EOF
cp Cargo.lock "$smoke/app/Cargo.lock"

# README's first Rust block; rustdoc's hidden lines ("# code", "#") shown, "##" unescaped.
code=$(awk '/^```rust/ { f = 1; next } f && /^```/ { exit } f' README.md |
  sed -E -e 's/^([[:space:]]*)# /\1/' -e 's/^([[:space:]]*)#$/\1/' -e 's/^([[:space:]]*)##/\1#/' |
  sed -e "s|\"/tmp/|\"$smoke/scratch/|g")
[ -n "$code" ] || { echo "test-crate-package.sh: no \`\`\`rust block in README.md" >&2; exit 1; }
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
(cd "$smoke/app" && cargo run --quiet)
echo "test-crate-package.sh: README's Rust example ran against the packaged strata-kv $version"
