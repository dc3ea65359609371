#!/usr/bin/env bash
# Run a command with the settings in .env (when present) exported; the environment wins over .env.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -f .env ]; then
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in ''|'#'*) continue ;; esac
    key=${line%%=*}
    [ -n "${!key+x}" ] || export "$key=${line#*=}"
  done <.env
fi
# make's services serve plain http on 127.0.0.1: no https-only cookies or redirects unless
# .env or the environment sets RAGKG_HTTPS=1 (a deployment behind TLS).
export RAGKG_HTTPS="${RAGKG_HTTPS:-0}"
exec "$@"
