#!/usr/bin/env bash
# make demo: start the sandbox, sync it into the default warehouse, print what
# landed and the command that opens it. With DATABASE_URL unset the warehouse
# is the private PostgreSQL cluster (its data folder: WAREHOUSE_LOCAL_DIR, else
# ~/.local/share/agencysync/postgres, or /var/lib/agencysync/postgres as root).
# The sandbox listens on free loopback ports unless DEMO_API_ADDR and
# DEMO_COMMS_ADDR name them; if it cannot start, the demo stops with its error.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${DEMO_BIN:-./bin}
LOG_DIR=${DEMO_LOG_DIR:-.data/demo}
mkdir -p "$LOG_DIR"
SANDBOX_LOG="$LOG_DIR/sandbox.log"
# Empty the previous demo's log before the new sandbox starts: its
# "listening" line names ports nobody listens on any more.
: >"$SANDBOX_LOG"

# A modest agency: 10 brands × 5 projects, 300 platform users, 20 000 e-mails
# over two years; the sandbox enforces the real limits (10 requests/s). Its
# keys are the sandbox's public defaults, which configs/sandbox/ holds as files:
# agencysync reads keys from files, never from values.
"$BIN/agencysandbox" --api-addr "${DEMO_API_ADDR:-127.0.0.1:0}" --comms-addr "${DEMO_COMMS_ADDR:-127.0.0.1:0}" \
  --brands 10 --projects-per-brand 5 --emails 20000 --history-days 730 \
  --api-key "$(cat configs/sandbox/agency_api_key)" --comms-key "$(cat configs/sandbox/agency_comms_key)" \
  --log-format json --log-level info \
  >>"$SANDBOX_LOG" 2>&1 &
SANDBOX_PID=$!
trap 'kill $SANDBOX_PID 2>/dev/null || true' EXIT

# The sandbox announces the addresses it listens on; until then, it either
# starts or exits with the reason (a taken port, a bad flag).
sandbox_failed() {
  echo "demo: the sandbox did not start ($1); the end of $SANDBOX_LOG:" >&2
  tail -n 20 "$SANDBOX_LOG" >&2
  exit 1
}
api_url='' comms_url=''
for _ in $(seq 1 300); do
  line=$(grep -m1 '"agencysandbox listening"' "$SANDBOX_LOG" || true)
  if [ -n "$line" ]; then
    api_url=$(sed -E 's/.*"api_url":"([^"]*)".*/\1/' <<<"$line")
    comms_url=$(sed -E 's/.*"communications_url":"(https?:\/\/[^/"]*)[^"]*".*/\1/' <<<"$line")
    break
  fi
  kill -0 "$SANDBOX_PID" 2>/dev/null || sandbox_failed "it exited"
  sleep 0.1
done
[ -n "$api_url" ] && [ -n "$comms_url" ] || sandbox_failed "no listening line after 30 s"

export AGENCY_BASE_URL="$api_url"
export AGENCY_COMMS_URL="$comms_url"
export AGENCY_API_KEY_FILE=configs/sandbox/agency_api_key
export AGENCY_COMMS_KEY_FILE=configs/sandbox/agency_comms_key
export AGENCY_COMMS_DOMAIN_ID=1
export AGENCY_COMMS_USER_IDS=1-300
export AGENCY_COMMS_START_DATE=2024-10-01
export WAREHOUSE_SCHEMA=${WAREHOUSE_SCHEMA:-agency}

echo "== sandbox: main interface $AGENCY_BASE_URL, communications $AGENCY_COMMS_URL (log: $SANDBOX_LOG)"
echo
echo "== migrate (creates the warehouse's tables; plan, status and check create nothing)"
"$BIN/agencysync" migrate up
echo
echo "== plan (no request sent)"
"$BIN/agencysync" plan
echo
echo "== sync"
rc=0
"$BIN/agencysync" run || rc=$?
echo
echo "== what landed"
"$BIN/agencysync" status
echo
echo "== open the warehouse (from $(pwd))"
prefix=''
if [ "$WAREHOUSE_SCHEMA" != agency ]; then prefix="WAREHOUSE_SCHEMA=$WAREHOUSE_SCHEMA "; fi
echo "  ${prefix}./bin/agencysync psql -c 'select count(*) from $WAREHOUSE_SCHEMA.emails'"
echo "  ${prefix}./bin/agencysync psql      # interactive; \\dv lists the views"
exit $rc
