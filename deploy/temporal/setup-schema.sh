#!/bin/sh
# Temporal's persistence schema on Postgres, with the admin tools' temporal-sql-tool (docker-compose.yml's
# temporal-schema service): both databases created once, then brought to the image's schema version.
# Idempotent: run again after upgrading the images, it applies only the newer versioned steps.
set -eu
: "${SQL_PASSWORD:?set SQL_PASSWORD}"
tool() { temporal-sql-tool --plugin postgres12 --ep postgres -p 5432 -u "${SQL_USER:-temporal}" "$@"; }
schema=/etc/temporal/schema/postgresql/v12
for pair in temporal:temporal temporal_visibility:visibility; do
  db=${pair%%:*}
  dir=${pair##*:}
  tool --db "$db" create || echo "database $db exists"
  tool --db "$db" setup-schema -v 0.0
  tool --db "$db" update-schema -d "$schema/$dir/versioned"
done
