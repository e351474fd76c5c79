#!/usr/bin/env bash
# Idempotent machine and project set-up, called by `npm start` and `npm test`.
# Each step checks for its result first, so a set-up machine passes through in about a second.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Go lives here on these machines even when a non-login shell's PATH lacks it.
command -v go >/dev/null || export PATH="$PATH:/usr/local/go/bin"

TEMPORAL_CLI_VERSION=1.5.1
# apt waits for a lock another install holds (a second set-up, the machine's own updates) instead of failing.
apt_wait=(-o DPkg::Lock::Timeout=600)
PG_MAJOR=${PG_MAJOR:-15}
PG_CONFIG=/usr/lib/postgresql/$PG_MAJOR/bin/pg_config

# 1. npm packages, installed only when node_modules is missing or older than the lockfile.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "installing npm packages from the lockfile"
  # `npm ci` installs exactly what package-lock.json pins and never rewrites it; the lockfile lists
  # every platform's optional packages (Biome's, swc's), so it installs the same on any machine.
  npm ci --no-audit --no-fund --loglevel=error
fi

# 2. The Temporal CLI (dev server + Web UI), built once into the Go bin directory.
GOBIN_DIR=$(go env GOBIN); [ -n "$GOBIN_DIR" ] || GOBIN_DIR="$(go env GOPATH)/bin"
if ! command -v temporal >/dev/null && ! [ -x "$GOBIN_DIR/temporal" ]; then
  log "building the Temporal CLI v$TEMPORAL_CLI_VERSION (takes a few minutes, once)"
  go install "github.com/temporalio/cli/cmd/temporal@v$TEMPORAL_CLI_VERSION"
fi

# 3. pgvector, built from Debian's source package against the running server.
if [ ! -f "$($PG_CONFIG --sharedir 2>/dev/null || echo /nonexistent)/extension/vector.control" ]; then
  log "building pgvector from Debian's source package"
  # The deb-src entry comes from the machine's own apt sources (its mirror, its keyring).
  src_list=/etc/apt/sources.list.d/weft-trixie-src.sources
  src_entry=$(bash scripts/debian-source.sh)
  if [ ! -f "$src_list" ] || [ "$(cat "$src_list")" != "$src_entry" ]; then
    printf '%s\n' "$src_entry" | as_root tee "$src_list" >/dev/null
  fi
  as_root apt-get "${apt_wait[@]}" update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get "${apt_wait[@]}" install -y -qq \
    "postgresql-server-dev-$PG_MAJOR" dpkg-dev >/dev/null
  build_dir=$(mktemp -d)
  (cd "$build_dir" && apt-get source -qq pgvector >/dev/null 2>&1 && cd pgvector-*/ \
    && make -s PG_CONFIG="$PG_CONFIG" && as_root make -s install PG_CONFIG="$PG_CONFIG")
  rm -rf "$build_dir"
fi

# 4. Tests only: Debian's Chromium for the console's browser tests (test/console.test.ts). A machine
#    where it cannot be installed still runs everything else; those tests skip and say why.
if [[ " $* " == *" --test "* ]] && [ ! -x /usr/bin/chromium ]; then
  log "installing chromium for the console's browser tests"
  if ! { as_root apt-get "${apt_wait[@]}" update -qq && as_root env DEBIAN_FRONTEND=noninteractive \
      apt-get "${apt_wait[@]}" install -y -qq --no-install-recommends chromium >/dev/null; }; then
    log "chromium could not be installed: the console's browser tests will skip"
  fi
fi

# The MCP Inspector (Node 22, outside the repository) for test/inspector.test.ts.
if [[ " $* " == *" --test "* ]] && ! bash scripts/inspector.sh >/dev/null; then
  log "the MCP Inspector could not be installed: test/inspector.test.ts will skip"
fi

# 5. Roles, databases, extension and migrations.
node_modules/.bin/tsx scripts/prepare-database.ts "$@"
