#!/usr/bin/env bash
# Builds `vigil` as an earlier commit had it, for the test that upgrades a
# running cluster of those agents to this build (crates/vigil-cli/tests/upgrade.rs).
#
#   scripts/compat/old-agent.sh [COMMIT]
#
# COMMIT defaults to the last one before envelope 3, stream pings,
# compressed views, the view digest and views in pages: every wire change
# the README's upgrade steps cover. Prints the binary's path on stdout
# (target/compat/vigil-COMMIT, kept for later runs); cargo's progress goes
# to stderr. Needs the commit in this clone's history (not a shallow clone:
# exits 2 without it); builds offline if cargo's registry already has the
# crates it needs.
set -euo pipefail
cd "$(dirname "$0")/../.."
commit=${1:-3740110}
if ! full=$(git rev-parse --verify --quiet "$commit^{commit}"); then
  echo "old-agent.sh: commit '$commit' is not in this clone's history (a shallow clone? git fetch --unshallow)" >&2
  exit 2
fi
short=${full:0:12}
out="target/compat/vigil-$short"
if [ -x "$out" ]; then
  echo "$out"
  exit 0
fi
src="target/compat/src-$short"
rm -rf "$src"
mkdir -p "$src"
git archive "$full" | tar -x -C "$src"
# Its own target directory: the same package names built from other sources
# must not replace this workspace's binaries.
CARGO_TARGET_DIR=target/compat/build cargo build --locked --quiet --manifest-path "$src/Cargo.toml" -p vigil-cli --bin vigil >&2
cp target/compat/build/debug/vigil "$out.part"
mv "$out.part" "$out"
rm -rf "$src"
echo "$out"
