#!/usr/bin/env bash
# The packaging check: every publishable package has the published shape, builds, packs (`pnpm pack`)
# and installs from its tarball with plain npm into an empty folder; each one imports with plain Node
# (its exports present, its internal modules not exported), a TypeScript consumer type-checks against the
# installed declarations, both bins run compiled code, and
# `clustermirror server --embedded 3` started from the installed tarballs answers ApiVersions and
# Metadata, then stops cleanly on SIGTERM. Exits non-zero on any failure, saying what failed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
started=$(date +%s)
# The install set-up made (a fresh npm project of the tarballs, redone whenever a package changed), so the
# packages are installed once per change; the checks run from an empty folder that sees only that install.
install="$root/.cache/install"
bash scripts/install-packages.sh "$install"
work=$(mktemp -d "${TMPDIR:-/tmp}/clustermirror-pack-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$install/package.json" "$work/package.json"
ln -s "$install/node_modules" "$work/node_modules"
mapfile -t packages < <(node scripts/package-shape.mjs --list)
cp scripts/pack-check.mjs "$work/pack-check.mjs"
(cd "$work" && node pack-check.mjs "$root" "${packages[@]}") || {
  echo "pack check failed (the published form of a package does not install, import or start)" >&2
  exit 1
}
echo "pack check ok: ${#packages[@]} packages packed, installed with npm and imported with node in $(($(date +%s) - started)) s"
