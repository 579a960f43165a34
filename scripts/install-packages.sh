#!/usr/bin/env bash
# Builds every publishable package, packs each one as it would be published (`pnpm pack`: the
# publishConfig fields point at dist, workspace:* becomes the version) and installs the tarballs with
# plain npm into DIR (made if missing), beside the pinned `effect`. Afterwards DIR/node_modules/.bin
# holds the compiled `clustermirror` and `clustermirror-mirrors`.
#   bash scripts/install-packages.sh DIR
set -euo pipefail
dir=${1:?usage: scripts/install-packages.sh DIR}
cd "$(dirname "$0")/.."
export TURBO_TELEMETRY_DISABLED=1
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

node scripts/package-shape.mjs
pnpm --silent build >"$dir/build.log" 2>&1 || { cat "$dir/build.log" >&2; echo "install-packages: pnpm build failed" >&2; exit 1; }
node scripts/package-shape.mjs --built

mapfile -t packages < <(node scripts/package-shape.mjs --list)
effect=$(node -p 'require("./packages/protocol/package.json").devDependencies.effect')

# What is packed: the same as at the last install, nothing to do (tarballs list their files in no fixed
# order, so their own checksums vary).
stamp=$( (
  echo "effect@$effect"
  for p in "${packages[@]}"; do find "$p/package.json" "$p/dist" "$p/src" -type f | LC_ALL=C sort | xargs sha256sum; done
) | sha256sum | cut -d' ' -f1)
if [ -f "$dir/installed.sha256" ] && [ "$(cat "$dir/installed.sha256")" = "$stamp" ] && [ -d "$dir/node_modules" ]; then
  echo "installed packages in $dir are up to date"
  exit 0
fi

rm -rf "$dir/tarballs"
mkdir -p "$dir/tarballs"
for p in "${packages[@]}"; do
  (cd "$p" && pnpm pack --pack-destination "$dir/tarballs" >/dev/null) || {
    echo "install-packages: pnpm pack failed in $p" >&2
    exit 1
  }
done

# A fresh project every time: only the tarballs and effect, as a user's project would have them.
rm -f "$dir/installed.sha256"
rm -rf "$dir/node_modules" "$dir/package-lock.json"
printf '{\n  "name": "clustermirror-installed",\n  "private": true,\n  "type": "module"\n}\n' >"$dir/package.json"
(cd "$dir" && npm install --prefer-offline --save-exact --no-audit --no-fund --loglevel=error \
  "effect@$effect" "$dir"/tarballs/*.tgz >"$dir/npm-install.log" 2>&1) || {
  cat "$dir/npm-install.log" >&2
  echo "install-packages: npm install of the tarballs failed" >&2
  exit 1
}
echo "$stamp" >"$dir/installed.sha256"
echo "installed ${#packages[@]} packages from their tarballs into $dir (effect@$effect)"
