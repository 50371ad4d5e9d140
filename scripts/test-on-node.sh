#!/usr/bin/env bash
# The suite again on another Node line (by default 24, the maintained LTS), taken from the npm registry's `node`
# package: nothing else is downloaded. Run after `npm test` (it uses the build that made).
#
# The SQLite driver is the one a user of that Node gets: package.json admits better-sqlite3 12 (Node 20) or 13
# (Node 22 and later, Node-API prebuilds inside the package), and npm picks the newest whose `engines` admit the
# Node that installs. The lockfile holds 12 (CI installs on Node 20), so 13 is installed apart with that Node and
# put in place for the run, then 12 is put back. 12 aborts on Node 24.19+ (see docs/design.md, "Node 24").
set -euo pipefail
cd "$(dirname "$0")/.."
version="${1:-24.21.0}"
where="$(mktemp -d)"
# The tests that run a CLI as an unprivileged user need to reach this Node binary.
chmod 755 "$where"
machine_driver="$where/machine-better-sqlite3"
restore() {
  if [ -d "$machine_driver" ]; then
    rm -rf node_modules/better-sqlite3
    mv "$machine_driver" node_modules/better-sqlite3
  fi
  rm -rf "$where"
}
trap restore EXIT
quiet=(--no-save --no-audit --no-fund --loglevel=error)
npm install --prefix "$where/node" "${quiet[@]}" "node@$version"
bin="$where/node/node_modules/node/bin"
driver="$(node -p "require('./package.json').dependencies['better-sqlite3'].split('||').pop().trim()")"
PATH="$bin:$PATH" npm install --prefix "$where/driver" "${quiet[@]}" "better-sqlite3@$driver"
mv node_modules/better-sqlite3 "$machine_driver"
cp -r "$where/driver/node_modules/better-sqlite3" node_modules/better-sqlite3
echo "the suite on Node $("$bin/node" --version) with better-sqlite3 $(PATH="$bin:$PATH" node -p "require('better-sqlite3/package.json').version")"
PATH="$bin:$PATH" node -e "new (require('better-sqlite3'))(':memory:').prepare('select 1').get()"
PATH="$bin:$PATH" npx vitest run
