#!/usr/bin/env bash
# Prepare this machine for ragkg, from nothing, idempotently:
#   1. a Python >= 3.12 (Django 6 needs it),
#   2. the virtualenv (outside the clone, reused between runs) with requirements-dev.txt
#      (and requirements-nodeps.txt, weight-only wheels installed without their dependencies),
#   3. the embedded Neo4j (tools/neo4j, dependencies from Maven Central),
#   4. the chain tools (tools/chain: the anvil node and the Solidity compiler, from npm),
#   5. the browser libraries (tools/frontend, from npm: cytoscape.js) copied into static/vendor/,
#   6. a .env with a generated DJANGO_SECRET_KEY when there is none.
# Test-only tools are the test setup's (the Makefile's chromium target, run by `make test`), not this script's.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${RAGKG_VENV:-$HOME/.cache/ragkg/venv}"

python_ok() {
  "$1" -c 'import sys, ssl, sqlite3, venv; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1
}

find_python() {
  local candidate
  for candidate in "${RAGKG_PYTHON:-}" python3.13 python3.12 python3 \
      "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3 /usr/bin/python3.1[2-9]; do
    [ -n "$candidate" ] || continue
    command -v "$candidate" >/dev/null 2>&1 || [ -x "$candidate" ] || continue
    if python_ok "$candidate"; then command -v "$candidate" || echo "$candidate"; return 0; fi
  done
  return 1
}

if [ ! -x "$VENV/bin/python" ] || ! python_ok "$VENV/bin/python"; then
  PYTHON=$(find_python) || {
    echo "ragkg needs Python >= 3.12 (Django 6). Install one (e.g. pyenv install 3.12) or set RAGKG_PYTHON=/path/to/python3.12" >&2
    exit 1
  }
  echo "setup: creating virtualenv $VENV with $PYTHON"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
fi

# Reinstall only when the requirements changed.
stamp="$VENV/.ragkg-requirements.sha256"
want=$(cat requirements.txt requirements-dev.txt requirements-nodeps.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing Python packages"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r requirements-nodeps.txt
  echo "$want" >"$stamp"
fi

# A tool's own output (Maven's colour codes, npm's summary) is kept in a file; shown only when it fails.
quietly() {
  local log
  log=$(mktemp)
  if ! "$@" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "setup: '$*' failed (its output is above)" >&2
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
}

# The embedded Neo4j: rebuild when its sources change.
neo4j_stamp="tools/neo4j/target/.ragkg-build.sha256"
neo4j_want=$(find tools/neo4j/pom.xml tools/neo4j/src -type f -print0 | sort -z | xargs -0 cat | sha256sum | cut -d' ' -f1)
if [ "$(cat "$neo4j_stamp" 2>/dev/null)" != "$neo4j_want" ]; then
  command -v java >/dev/null || { echo "setup: Java 17 is required for the embedded Neo4j" >&2; exit 1; }
  command -v mvn >/dev/null || { echo "setup: installing Maven"; apt-get update -qq && apt-get install -y -qq maven; }
  echo "setup: building the embedded Neo4j (tools/neo4j)"
  quietly mvn -q -B -Dstyle.color=never -f tools/neo4j/pom.xml -DskipTests package
  echo "$neo4j_want" >"$neo4j_stamp"
fi

# The chain tools (anvil, solc): reinstall when the npm lock file changes.
chain_stamp="tools/chain/node_modules/.ragkg-install.sha256"
chain_want=$(sha256sum tools/chain/package-lock.json | cut -d' ' -f1)
if [ "$(cat "$chain_stamp" 2>/dev/null)" != "$chain_want" ]; then
  command -v npm >/dev/null || { echo "setup: installing Node.js and npm"; apt-get update -qq && apt-get install -y -qq nodejs npm; }
  echo "setup: installing the chain tools (tools/chain: anvil, solc)"
  (cd tools/chain && quietly npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  echo "$chain_want" >"$chain_stamp"
fi

# The browser libraries (tools/frontend: cytoscape.js, pinned in its lock file), served from
# static/vendor/ (no CDN; the copies are not committed): reinstall and copy when the lock file changes
# or a copy is missing.
frontend_stamp="tools/frontend/node_modules/.ragkg-install.sha256"
frontend_want=$(sha256sum tools/frontend/package-lock.json | cut -d' ' -f1)
if [ "$(cat "$frontend_stamp" 2>/dev/null)" != "$frontend_want" ] || [ ! -f static/vendor/cytoscape/cytoscape.min.js ]; then
  command -v npm >/dev/null || { echo "setup: installing Node.js and npm"; apt-get update -qq && apt-get install -y -qq nodejs npm; }
  echo "setup: installing the browser libraries (tools/frontend: cytoscape.js) into static/vendor"
  (cd tools/frontend && quietly npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  rm -rf static/vendor/cytoscape && mkdir -p static/vendor/cytoscape
  cp tools/frontend/node_modules/cytoscape/dist/cytoscape.min.js tools/frontend/node_modules/cytoscape/LICENSE \
    static/vendor/cytoscape/
  echo "$frontend_want" >"$frontend_stamp"
fi

if [ ! -f .env ]; then
  secret=$("$VENV/bin/python" -c 'import secrets; print(secrets.token_urlsafe(50).replace("-", "x"))')
  sed "s|^DJANGO_SECRET_KEY=.*|DJANGO_SECRET_KEY=$secret|" .env.example >.env
  echo "setup: wrote .env (edit it to configure ragkg)"
fi
