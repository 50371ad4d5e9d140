#!/usr/bin/env bash
# What users install is what `npm pack` makes: the tarball installed globally with --omit=dev into a
# temporary prefix (its dependencies resolved as a user's npm resolves them), then `genbatch --version` from
# PATH and a rehearsal of the demo, in a folder outside this checkout. Prints the installed size.
set -euo pipefail
cd "$(dirname "$0")/.."
where="$(mktemp -d)"
trap 'rm -rf "$where"' EXIT
chmod 755 "$where"
quiet=(--no-audit --no-fund --loglevel=error)
tarball="$(npm pack --silent --pack-destination "$where" | tail -n 1)"
echo "packed: $tarball ($(du -k "$where/$tarball" | cut -f1) kB)"
npm install --global --prefix "$where/prefix" --omit=dev "${quiet[@]}" "$where/$tarball"
export PATH="$where/prefix/bin:$PATH"
echo "installed: genbatch $(genbatch --version), $(du -sm "$where/prefix" | cut -f1) MB with its dependencies"
mkdir -p "$where/user/manifests"
cp manifests/demo.yaml "$where/user/manifests/"
cd "$where/user"
genbatch validate manifests/demo.yaml
# The results file is the one the run names, so this check follows wherever a rehearsal writes. The run's output
# is kept, then shown: `tee /dev/stderr` reopens stderr, and a CI log redirected to a file was truncated by it.
said="$(genbatch run manifests/demo.yaml --simulate)"
printf '%s\n' "$said"
results="$(printf '%s\n' "$said" | sed -n 's/^results: \([^,]*\),.*/\1/p')"
test -s "$results"
echo "the packed package runs the demo"
