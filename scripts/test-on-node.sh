#!/usr/bin/env bash
# The suite again on another Node line (by default 24, the maintained LTS), taken from the npm registry's `node`
# package (its binary and headers come inside registry packages: nothing else is downloaded). The native addon
# (better-sqlite3) is built for that Node from source against those headers, then the machine Node's build is put
# back, so node_modules still works with it afterwards. Run after `npm test` (it uses the build that made).
# Not in CI yet: on Node 24.19 and later, better-sqlite3 12 aborts the process when a Statement is collected by an
# idle GC (Assertion failed: (env) != nullptr in node::RemoveEnvironmentCleanupHook); see docs/design.md.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${1:-24.21.0}"
where="$(mktemp -d)"
# The tests that run a CLI as an unprivileged user need to reach this Node binary.
chmod 755 "$where"
addon=node_modules/better-sqlite3/build/Release/better_sqlite3.node
cp "$addon" "$where/machine-node.addon"
restore() {
  cp "$where/machine-node.addon" "$addon"
  rm -rf "$where"
}
trap restore EXIT
npm install --prefix "$where" --no-save --no-audit --no-fund --loglevel=error "node@$version"
bin="$where/node_modules/node/bin"
headers="$(dirname "$(ls -d "$where"/node_modules/node/node_modules/node-*/include | head -1)")"
echo "the suite on $("$bin/node" --version) (and the machine's $(node --version) above)"
PATH="$bin:$PATH" npm rebuild better-sqlite3 --nodedir="$headers" --loglevel=error
PATH="$bin:$PATH" node -e "new (require('better-sqlite3'))(':memory:')"
PATH="$bin:$PATH" npx vitest run
