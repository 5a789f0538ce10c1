#!/usr/bin/env bash
# Sets up everything a fresh machine needs and runs the whole test suite.
# This is the README's test command; CI (.ci/run) runs exactly this.
#
# Needs: python3 (>= 3.11) with venv, Node.js >= 20 with npm, and apt-get (root) for the
# Debian packages of the browser tests. Network: the package registries only.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "Python: virtual environment with kb-lsp and its test tools"
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[test]"

step "Python: ruff and mypy"
.venv/bin/ruff check server tests bench
.venv/bin/mypy

step "Python: unit and end-to-end tests (real server over stdio)"
.venv/bin/python -m pytest -q -p no:cacheprovider tests

step "Extension: Debian packages (Chromium for the browser tests, code-server's build headers)"
need=()
for pkg in chromium ripgrep libkrb5-dev libsecret-1-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ "${#need[@]}" -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

step "Extension: build, lint, unit, webview (Chromium), contract (real server)"
npm ci --no-audit --no-fund
export KB_PYTHON="$PWD/.venv/bin/python"
npm test

step "Extension: the packaged .vsix in a real VS Code (code-server + Chromium)"
bash scripts/extension/install-code-server.sh
npm run test:vscode
