#!/usr/bin/env bash
# Sets up a fresh machine and runs the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec pnpm --silent --filter @clustermirror/server exec tsx src/main.ts server --port "${PORT:-9092}" --data-dir "${DATA_DIR:-.data/server}" "$@"
