#!/usr/bin/env bash
# Sets up a fresh machine (dependencies and test peers) and runs every check and test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/peers.sh
export TURBO_TELEMETRY_DISABLED=1
pnpm lint
pnpm check
pnpm test
pnpm test:int
