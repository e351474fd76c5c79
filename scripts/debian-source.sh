#!/usr/bin/env bash
# Prints the deb-src entry (deb822) that set-up adds to build pgvector from Debian's source package,
# derived from this machine's own apt configuration: the URI (and keyring) of the entry that serves
# the installed release's main suite. So the repository names no package host, and a machine behind
# a mirror keeps using its mirror.
#   usage: debian-source.sh [APT_DIR]     (default /etc/apt; OS_CODENAME overrides /etc/os-release)
# Exits 1 when no configured entry serves the release.
set -euo pipefail

APT_DIR=${1:-/etc/apt}
SOURCE_SUITE=${SOURCE_SUITE:-trixie}
DEFAULT_KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
codename=${OS_CODENAME:-$(. /etc/os-release && echo "${VERSION_CODENAME:-}")}
[ -n "$codename" ] || { echo "debian-source: cannot tell this machine's release" >&2; exit 1; }

# One line per configured `deb` entry: URI <tab> suites <tab> keyring (or empty).
entries() {
  shopt -s nullglob
  local file
  for file in "$APT_DIR"/sources.list.d/*.sources; do
    # Set-up's own entry is the output of this script, not an input.
    case "$(basename "$file")" in weft-*) continue ;; esac
    awk '
      function flush() {
        if (types ~ /(^| )deb( |$)/ && enabled != "no" && uris != "") {
          split(uris, u, " ")
          printf "%s\t%s\t%s\n", u[1], suites, (signed ~ /^\//) ? signed : ""
        }
        types = uris = suites = signed = enabled = ""
      }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { flush(); next }
      /^[ \t]/ { next }  # a continuation line (an inline key block)
      {
        field = tolower($1); sub(/:$/, "", field)
        value = $0; sub(/^[^:]*:[ \t]*/, "", value)
        if (field == "types") types = value
        else if (field == "uris") uris = value
        else if (field == "suites") suites = value
        else if (field == "signed-by") signed = value
        else if (field == "enabled") enabled = tolower(value)
      }
      END { flush() }
    ' "$file"
  done
  for file in "$APT_DIR"/sources.list "$APT_DIR"/sources.list.d/*.list; do
    [ -f "$file" ] || continue
    awk '
      $1 != "deb" { next }
      {
        i = 2; signed = ""
        if ($2 ~ /^\[/) {
          for (; i <= NF; i++) {
            if ($i ~ /^\[?signed-by=/) { signed = $i; sub(/^\[?signed-by=/, "", signed); sub(/\]$/, "", signed) }
            if ($i ~ /\]$/) { i++; break }
          }
        }
        printf "%s\t%s\t%s\n", $i, $(i + 1), signed
      }
    ' "$file"
  done
}

# The entry that serves the release itself (`bookworm`, not `bookworm-security`): the main archive.
match=$(entries | awk -F '\t' -v codename="$codename" '
  { n = split($2, suites, " "); for (i = 1; i <= n; i++) if (suites[i] == codename) { print; exit } }
')
[ -n "$match" ] || { echo "debian-source: no apt source serves $codename in $APT_DIR" >&2; exit 1; }
uri=$(printf '%s' "$match" | cut -f1)
keyring=$(printf '%s' "$match" | cut -f3)

printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n' \
  "$uri" "$SOURCE_SUITE" "${keyring:-$DEFAULT_KEYRING}"
