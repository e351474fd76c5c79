#!/usr/bin/env bash
# A streaming-replication standby of the machine's Postgres (issue 44 item 4), for DATABASE_REPLICA_URL.
#   bash scripts/standby.sh [up]   make it once with pg_basebackup, start it, wait until it has caught up
#   bash scripts/standby.sh down   stop it (its data stays; `up` starts it again and it catches up)
#   bash scripts/standby.sh url    print DATABASE_URL with the standby's port
# Idempotent: a running standby that streams passes through in well under a second. A standby that
# cannot catch up (made from another primary, its slot gone) is made again from a fresh base backup.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[standby] %s\n' "$*" >&2; }
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else sudo -u postgres "$@"; fi; }

PG_MAJOR=${PG_MAJOR:-15}
PG_BIN=/usr/lib/postgresql/$PG_MAJOR/bin
PRIMARY_PORT=${PGPORT:-5432}
STANDBY_PORT=${WEFT_STANDBY_PORT:-5433}
STANDBY_DIR=${WEFT_STANDBY_DIR:-/var/lib/postgresql/weft-standby-$STANDBY_PORT}
# One physical slot keeps the WAL the standby has not received while it is down (between sessions).
SLOT=weft_standby_$STANDBY_PORT
primary() { psql -h 127.0.0.1 -p "$PRIMARY_PORT" -U postgres -d postgres -AtqX -v ON_ERROR_STOP=1 -c "$1"; }
standby() { psql -h 127.0.0.1 -p "$STANDBY_PORT" -U postgres -d postgres -AtqX -c "$1" 2>/dev/null; }

case "${1:-up}" in
  url)
    url=${DATABASE_URL:-postgres://weft_app@127.0.0.1:$PRIMARY_PORT/weft}
    printf '%s\n' "$url" | sed -E "s#@([^:/]+)(:[0-9]+)?/#@\1:$STANDBY_PORT/#"
    exit 0
    ;;
  down)
    if [ -f "$STANDBY_DIR/postmaster.pid" ]; then as_postgres "$PG_BIN/pg_ctl" -D "$STANDBY_DIR" -m fast stop >/dev/null; fi
    exit 0
    ;;
  up) ;;
  *) echo "usage: standby.sh [up|down|url]" >&2; exit 2 ;;
esac

# Caught up: the standby has replayed what the primary had written when we asked.
caught_up() {
  local target
  target=$(primary "SELECT pg_current_wal_lsn()")
  for _ in $(seq 1 ${1:-60}); do
    [ "$(standby "SELECT pg_last_wal_replay_lsn() >= '$target'::pg_lsn")" = t ] && return 0
    sleep 0.5
  done
  return 1
}

start() {
  as_postgres "$PG_BIN/pg_ctl" -D "$STANDBY_DIR" -l "$STANDBY_DIR/standby.log" -w -t 60 \
    -o "-c config_file=$STANDBY_DIR/weft-standby.conf" start >/dev/null
}

make_standby() {
  # Replication connections match only `replication` lines of pg_hba.conf: loopback, trust, as the rest.
  hba=$(primary "SHOW hba_file")
  if ! grep -qE '^host[[:space:]]+replication[[:space:]]+all[[:space:]]+127\.0\.0\.1/32' "$hba"; then
    log "allowing replication connections from loopback in $hba"
    printf 'host replication all 127.0.0.1/32 trust\n' >>"$hba"
    primary "SELECT pg_reload_conf()" >/dev/null
  fi
  [ -f "$STANDBY_DIR/postmaster.pid" ] && as_postgres "$PG_BIN/pg_ctl" -D "$STANDBY_DIR" -m immediate stop >/dev/null || true
  rm -rf "$STANDBY_DIR"
  primary "SELECT pg_drop_replication_slot('$SLOT') FROM pg_replication_slots WHERE slot_name = '$SLOT'" >/dev/null
  log "making the standby in $STANDBY_DIR (pg_basebackup, port $STANDBY_PORT)"
  install -d -o postgres -g postgres -m 700 "$STANDBY_DIR"
  as_postgres "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$PRIMARY_PORT" -U postgres -D "$STANDBY_DIR" \
    -X stream -C -S "$SLOT" -R -c fast
  # Debian keeps the cluster's configuration outside its data directory: the standby gets its own.
  as_postgres tee "$STANDBY_DIR/weft-standby.conf" >/dev/null <<EOF
port = $STANDBY_PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$STANDBY_DIR'
hba_file = '$hba'
hot_standby = on
hot_standby_feedback = on
max_connections = 200
shared_buffers = 128MB
max_standby_streaming_delay = 5s
EOF
  start
}

if [ -f "$STANDBY_DIR/standby.signal" ]; then
  if [ "$(standby 'SELECT pg_is_in_recovery()')" != t ]; then
    log "starting the standby on port $STANDBY_PORT"
    start || make_standby
  fi
  if caught_up 20; then exit 0; fi
  log "the standby does not catch up: making it again"
fi
make_standby
caught_up 120 || { log "the new standby did not catch up; see $STANDBY_DIR/standby.log"; exit 1; }
log "standby streaming on port $STANDBY_PORT"
