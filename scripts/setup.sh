#!/usr/bin/env bash
# Installs what a fresh machine needs to build and run clustermirror: pnpm (the version pinned in
# package.json) and the workspace's dependencies. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
want=$(node -p 'require("./package.json").packageManager.split("@")[1]')
if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm --version)" != "$want" ]; then
  npm install -g --silent "pnpm@$want" >/dev/null
fi
export TURBO_TELEMETRY_DISABLED=1
pnpm install --frozen-lockfile --reporter=silent
