#!/bin/sh
# Temporal's persistence and visibility schemas on Postgres with temporal-sql-tool. ONE script for both users:
# docker-compose.yml's temporal-schema service (the admin tools' image, its tool and schema directory) and
# `npm run cluster` (scripts/cluster.ts: the tool it built, the schema files of the module source it built from,
# the machine's Postgres). Both databases are created once, then brought to exactly the schema versions
# versions.env names. Idempotent: run again after an upgrade, it applies only the newer versioned steps.
set -eu
. "${TEMPORAL_VERSIONS_FILE:-$(dirname "$0")/versions.env}"
: "${SQL_HOST:=postgres}" "${SQL_PORT:=5432}" "${SQL_USER:=temporal}"
: "${SQL_PASSWORD:=}" "${TEMPORAL_SQL_TOOL:=temporal-sql-tool}"
: "${TEMPORAL_SCHEMA_DIR:=/etc/temporal/schema/postgresql/v12}"
: "${DBNAME:=temporal}" "${VISIBILITY_DBNAME:=temporal_visibility}"
export SQL_PASSWORD
tool() { "$TEMPORAL_SQL_TOOL" --plugin postgres12 --ep "$SQL_HOST" -p "$SQL_PORT" -u "$SQL_USER" "$@"; }
for spec in "$DBNAME:temporal:$TEMPORAL_SCHEMA_VERSION" "$VISIBILITY_DBNAME:visibility:$TEMPORAL_VISIBILITY_SCHEMA_VERSION"; do
  db=${spec%%:*}
  rest=${spec#*:}
  dir=${rest%%:*}
  version=${rest#*:}
  tool --db "$db" create 2>/dev/null || echo "database $db exists"
  tool --db "$db" setup-schema -v 0.0
  tool --db "$db" update-schema -d "$TEMPORAL_SCHEMA_DIR/$dir/versioned" -v "$version"
done
