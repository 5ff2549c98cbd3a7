#!/usr/bin/env bash
# Instructions per operation, counted exactly with callgrind (valgrind), for
# vigil's Akka/Normal/Exponential detectors and the two crates.io phi crates
# on the same workload. Needs valgrind. Usage: scripts/opcount.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200000}
cargo build -q --release -p vigil-detector --example opcount
BIN=target/release/examples/opcount
count() { # impl op n -> total instructions
  local out
  out=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$BIN" "$1" "$2" "$3" 2>&1 | grep -E "Collected" | grep -oE "[0-9]+$")
  echo "$out"
}
printf '| implementation | heartbeat | level | heartbeat + level |\n|---|---|---|---|\n'
for imp in akka normal exponential phi-accrual-failure-detector phi-detector; do
  row="| $imp"
  for op in heartbeat level pair; do
    a=$(count "$imp" "$op" "$N"); b=$(count "$imp" "$op" 0)
    row="$row | $(python3 -c "print(f'{($a-$b)/$N:.1f}')")"
  done
  echo "$row |"
done
