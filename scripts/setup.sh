#!/usr/bin/env bash
# Installs what a fresh machine needs to build and run clustermirror: pnpm (the version pinned in
# package.json) and the workspace's dependencies; then builds and packs the packages, installs them from
# their tarballs with npm into .cache/install (as a user's `npm install` would) and links the compiled
# `clustermirror` and `clustermirror-mirrors` into npm's global bin directory (on the PATH where npm's
# global installs are; CLUSTERMIRROR_BIN_DIR picks another). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
want=$(node -p 'require("./package.json").packageManager.split("@")[1]')
if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm --version)" != "$want" ]; then
  npm install -g --silent "pnpm@$want" >/dev/null
fi
export TURBO_TELEMETRY_DISABLED=1
pnpm install --frozen-lockfile --reporter=silent

installed="$PWD/.cache/install/node_modules/.bin"
if ! bash scripts/install-packages.sh .cache/install >/dev/null; then
  # The workspace is set up; only the installed bins are missing (scripts/pack-check.sh fails on the same).
  echo "setup: the packages did not build, pack or install (above): clustermirror is not on the PATH" >&2
  exit 0
fi
bindir=${CLUSTERMIRROR_BIN_DIR:-$(npm prefix -g)/bin}
linked=true
for bin in clustermirror clustermirror-mirrors; do
  # Only our own links are replaced: a file of that name that is not a link stays.
  if mkdir -p "$bindir" 2>/dev/null && [ -w "$bindir" ] && { [ -L "$bindir/$bin" ] || [ ! -e "$bindir/$bin" ]; }; then
    ln -sfn "$installed/$bin" "$bindir/$bin"
  else
    linked=false
  fi
done
if $linked; then
  echo "clustermirror and clustermirror-mirrors (compiled) are in $bindir"
else
  echo "could not link the bins into $bindir: run them as $installed/clustermirror and $installed/clustermirror-mirrors" >&2
fi
