#!/usr/bin/env bash
# Sets up a fresh machine (dependencies and test peers) and runs every check and test, then prints
# the totals of every vitest run as one line. The short fault campaign (`pnpm chaos --minutes 3`) runs last.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/peers.sh
export TURBO_TELEMETRY_DISABLED=1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
pnpm lint
pnpm check
# The published form: every package packed, installed with npm into an empty folder, imported with node,
# and `clustermirror server --embedded 3` started from the tarballs
bash scripts/pack-check.sh
pnpm test 2>&1 | tee -a "$log"
pnpm test:int 2>&1 | tee -a "$log"
# The short fault campaign: real clusters, seeded faults, then loss, replica, ISR, mirror and failover checks
pnpm chaos --minutes 3
# vitest prints "Tests  N passed | M failed (T)" per package run
summary=$(sed -E 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^\S*\s+Tests\s+' || true)
passed=$(printf '%s\n' "$summary" | { grep -oE '[0-9]+ passed' || true; } | awk '{s+=$1} END {print s+0}')
failed=$(printf '%s\n' "$summary" | { grep -oE '[0-9]+ failed' || true; } | awk '{s+=$1} END {print s+0}')
echo "Tests: ${passed} passed, ${failed} failed"
