#!/usr/bin/env bash
# make demo: start the sandbox, sync it into the default warehouse, print what
# landed. With DATABASE_URL unset the warehouse is a private PostgreSQL
# cluster kept in .data/postgres (make clean removes it).
set -euo pipefail
cd "$(dirname "$0")/.."

API_ADDR=${DEMO_API_ADDR:-127.0.0.1:18081}
COMMS_ADDR=${DEMO_COMMS_ADDR:-127.0.0.1:18082}
LOG_DIR=.data/demo
mkdir -p "$LOG_DIR"

# A modest agency: 10 brands × 5 projects, 300 platform users, 20 000 e-mails
# over two years; the sandbox enforces the real limits (10 requests/s). Its
# keys are the sandbox's public defaults, which configs/sandbox/ holds as files:
# agencysync reads keys from files, never from values.
./bin/agencysandbox --api-addr "$API_ADDR" --comms-addr "$COMMS_ADDR" \
  --brands 10 --projects-per-brand 5 --emails 20000 --history-days 730 \
  --api-key "$(cat configs/sandbox/agency_api_key)" --comms-key "$(cat configs/sandbox/agency_comms_key)" \
  --log-format json --log-level warn \
  >"$LOG_DIR/sandbox.log" 2>&1 &
SANDBOX_PID=$!
trap 'kill $SANDBOX_PID 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
  if (exec 3<>"/dev/tcp/${API_ADDR%:*}/${API_ADDR#*:}") 2>/dev/null; then break; fi
  sleep 0.1
done

export AGENCY_BASE_URL="http://$API_ADDR"
export AGENCY_COMMS_URL="http://$COMMS_ADDR"
export AGENCY_API_KEY_FILE=configs/sandbox/agency_api_key
export AGENCY_COMMS_KEY_FILE=configs/sandbox/agency_comms_key
export AGENCY_COMMS_DOMAIN_ID=1
export AGENCY_COMMS_USER_IDS=1-300
export AGENCY_COMMS_START_DATE=2024-10-01
export WAREHOUSE_SCHEMA=${WAREHOUSE_SCHEMA:-agency}

echo "== plan (no request sent)"
./bin/agencysync plan
echo
echo "== sync"
rc=0
./bin/agencysync run || rc=$?
echo
echo "== what landed"
./bin/agencysync status
exit $rc
