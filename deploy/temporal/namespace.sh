#!/bin/sh
# The namespace Weft runs in and Weft's search attributes, once the frontend answers. ONE script for both users:
# docker-compose.yml's temporal-namespace service (the admin tools' `temporal` CLI) and `npm run cluster`
# (the CLI scripts/setup.sh built). The attributes are CUSTOM_SEARCH_ATTRIBUTES of
# src/platform/temporal/search-attributes.ts (test/unit/temporal-cluster.test.ts keeps the two equal); Weft
# also registers any that are missing when it starts. Idempotent.
set -eu
: "${TEMPORAL_CLI:=temporal}" "${TEMPORAL_NAMESPACE:=default}" "${TEMPORAL_RETENTION:=7d}"
ATTRIBUTES="WeftWorkspaceId=Keyword WeftRunStatus=Keyword WeftAgent=Keyword WeftKind=Keyword WeftWaitingFor=Keyword
WeftTags=KeywordList"
cli() { "$TEMPORAL_CLI" "$@"; }
cli operator namespace describe -n "$TEMPORAL_NAMESPACE" >/dev/null 2>&1 ||
  cli operator namespace create -n "$TEMPORAL_NAMESPACE" --retention "$TEMPORAL_RETENTION"
existing=$(cli operator search-attribute list -n "$TEMPORAL_NAMESPACE")
for pair in $ATTRIBUTES; do
  name=${pair%%=*}
  printf '%s\n' "$existing" | grep -qw "$name" ||
    cli operator search-attribute create -n "$TEMPORAL_NAMESPACE" --name "$name" --type "${pair#*=}"
done
