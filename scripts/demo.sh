#!/usr/bin/env bash
# Sets up a fresh machine and runs the main job: the mirroring demo on embedded clusters (a source and a
# destination cluster of three brokers each, in one process). Extra flags go to the demo (--records N, --rate N).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec pnpm --silent --filter @clustermirror/demo exec tsx src/main.ts "$@"
