#!/usr/bin/env bash
# A real PostgreSQL server on 127.0.0.1:5432 for the shared-ledger tests (idempotent).
# Creates role/database trialbook/trialbook_test; tests read TRIALBOOK_TEST_PG (default below).
set -euo pipefail
if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q postgresql >/dev/null
fi
version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
if ! pg_lsclusters -h | grep -q "^$version main"; then
  pg_createcluster "$version" main >/dev/null
fi
pg_ctlcluster "$version" main start 2>/dev/null || true
for _ in $(seq 1 30); do
  su postgres -c "pg_isready -q -h 127.0.0.1" && break
  sleep 1
done
su postgres -c "psql -q -tc \"SELECT 1 FROM pg_roles WHERE rolname='trialbook'\"" | grep -q 1 ||
  su postgres -c "psql -q -c \"CREATE ROLE trialbook LOGIN PASSWORD 'trialbook' CREATEDB\""
su postgres -c "psql -q -tc \"SELECT 1 FROM pg_database WHERE datname='trialbook_test'\"" | grep -q 1 ||
  su postgres -c "psql -q -c 'CREATE DATABASE trialbook_test OWNER trialbook'"
echo "postgresql ready: postgresql://trialbook:trialbook@127.0.0.1:5432/trialbook_test"
