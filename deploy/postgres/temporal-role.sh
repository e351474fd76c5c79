#!/bin/sh
# Temporal's own role (docker-compose.yml's temporal-role service): the server and the admin tools connect as
# `temporal`, never as the superuser. Idempotent: the role is created once, its password set every time.
set -eu
: "${TEMPORAL_DB_PASSWORD:?set TEMPORAL_DB_PASSWORD}"
psql -h postgres -U postgres -d postgres -v ON_ERROR_STOP=1 -v pw="$TEMPORAL_DB_PASSWORD" <<'SQL'
SELECT 'CREATE ROLE temporal LOGIN CREATEDB' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'temporal')
\gexec
ALTER ROLE temporal PASSWORD :'pw';
SQL
