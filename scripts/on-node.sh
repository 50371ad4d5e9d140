#!/usr/bin/env bash
# A user's install on another Node line, with nothing done by hand: a copy of this checkout (its tracked and
# new files, no node_modules, no build), `npm ci` from the committed lockfile with that Node (from the npm
# registry's `node` package: nothing else is downloaded), then the suite or the demo with it.
#
#   bash scripts/on-node.sh 24.21.0 suite     # npm ci, then vitest
#   bash scripts/on-node.sh 26.10.0 demo      # npm ci, then npm run demo
#
# The lockfile holds both SQLite drivers as optional dependencies (better-sqlite3 13 for Node 22 and later,
# 12 for Node 20); npm installs those whose engines admit this Node and genbatch loads the one built for it.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${1:?a Node version, such as 24.21.0}"
what="${2:-suite}"
where="$(mktemp -d)"
trap 'rm -rf "$where"' EXIT
# The tests that run a CLI as an unprivileged user need to reach this Node binary and the copy.
chmod 755 "$where"
quiet=(--no-audit --no-fund --loglevel=error)
npm install --prefix "$where/node" --no-save "${quiet[@]}" "node@$version"
bin="$where/node/node_modules/node/bin"
mkdir "$where/repo"
git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C "$where/repo"
cd "$where/repo"
export PATH="$bin:$PATH"
echo "on Node $(node --version): npm ci from the committed lockfile"
npm ci "${quiet[@]}"
node -e "import('./dist/store/driver.js').then((d) => console.log('SQLite driver:', d.loadedDriver()))"
case "$what" in
  suite) npx vitest run ;;
  demo) npm run demo ;;
  *) echo "what to run: suite or demo, not $what" >&2; exit 2 ;;
esac
