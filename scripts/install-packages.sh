#!/usr/bin/env bash
# Builds every publishable package, packs each one as it would be published (`pnpm pack`: the
# publishConfig fields point at dist, workspace:* becomes the version) and installs the tarballs with
# plain npm into DIR (made if missing), beside the pinned `effect`. Afterwards DIR/node_modules/.bin
# holds the compiled `clustermirror` and `clustermirror-mirrors`.
#   bash scripts/install-packages.sh DIR
set -euo pipefail
dir=${1:?usage: scripts/install-packages.sh DIR}
cd "$(dirname "$0")/.."
root=$PWD
export TURBO_TELEMETRY_DISABLED=1
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

node scripts/package-shape.mjs
pnpm --silent build >"$dir/build.log" 2>&1 || { cat "$dir/build.log" >&2; echo "install-packages: pnpm build failed" >&2; exit 1; }
node scripts/package-shape.mjs --built

rm -rf "$dir/tarballs"
mkdir -p "$dir/tarballs"
mapfile -t packages < <(node scripts/package-shape.mjs --list)
for p in "${packages[@]}"; do
  (cd "$p" && pnpm pack --pack-destination "$dir/tarballs" >/dev/null) || {
    echo "install-packages: pnpm pack failed in $p" >&2
    exit 1
  }
done
effect=$(node -p 'require("./packages/protocol/package.json").devDependencies.effect')

# A fresh project every time: only the tarballs and effect, as a user's project would have them.
rm -rf "$dir/node_modules" "$dir/package-lock.json"
printf '{\n  "name": "clustermirror-installed",\n  "private": true,\n  "type": "module"\n}\n' >"$dir/package.json"
(cd "$dir" && npm install --prefer-offline --save-exact --no-audit --no-fund --loglevel=error \
  "effect@$effect" "$dir"/tarballs/*.tgz >"$dir/npm-install.log" 2>&1) || {
  cat "$dir/npm-install.log" >&2
  echo "install-packages: npm install of the tarballs failed" >&2
  exit 1
}
echo "installed ${#packages[@]} packages from their tarballs into $dir (effect@$effect)"
cd "$root"
