#!/usr/bin/env bash
# Installs code-server 4.100.3 (VS Code 1.100 in the browser) for the extension's e2e test,
# into vscode-extension/.code-server/ (git-ignored). Works offline apart from the npm and
# Debian registries: the ripgrep binary VS Code would download from GitHub is taken from
# Debian's `ripgrep` package instead. See shared/notes/vscode-in-ci.md.
#
#   scripts/extension/install-code-server.sh        # idempotent; skips when installed
#
# Needs (Debian): libkrb5-dev libsecret-1-dev ripgrep build-essential python3 (node-gyp).
set -euo pipefail

VERSION=4.100.3
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
DEST="$ROOT/vscode-extension/.code-server"
BIN="$DEST/node_modules/.bin/code-server"

if [ -x "$BIN" ] && "$BIN" --version 2>/dev/null | grep -q "^$VERSION"; then
  echo "code-server $VERSION already installed in $DEST"
  exit 0
fi

missing=()
for pkg in libkrb5-dev libsecret-1-dev ripgrep; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get install -y "${missing[@]}" >/dev/null || { apt-get update >/dev/null && apt-get install -y "${missing[@]}" >/dev/null; }
  else
    echo "missing Debian packages: ${missing[*]} (apt-get install -y ${missing[*]})" >&2
    exit 1
  fi
fi

# @vscode/ripgrep's post-install looks for this archive before it tries GitHub.
TMP="${TMPDIR:-/tmp}"
CACHE="$TMP/vscode-ripgrep-cache-1.15.11"
ARCHIVE="$CACHE/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz"
if [ ! -s "$ARCHIVE" ]; then
  mkdir -p "$CACHE"
  staging="$(mktemp -d)"
  cp "$(command -v rg)" "$staging/rg"
  tar -C "$staging" -czf "$ARCHIVE" rg
  rm -rf "$staging"
fi

# code-server's argon2 has no prebuilt binary reachable here, so node-gyp builds it and
# needs Node's headers; without `nodedir` it downloads them from nodejs.org, which this
# network refuses. Point it at the installed Node's own headers rather than relying on a
# user's ~/.npmrc (CI and a fresh machine have an empty HOME).
if [ -z "${npm_config_nodedir:-}" ]; then
  node_prefix="$(dirname "$(dirname "$(node -p 'process.execPath')")")"
  if [ -f "$node_prefix/include/node/node.h" ]; then
    export npm_config_nodedir="$node_prefix"
  else
    echo "Node's headers are missing ($node_prefix/include/node): install them (Debian: libnode-dev) or set npm_config_nodedir" >&2
  fi
fi

mkdir -p "$DEST"
cd "$DEST"
[ -f package.json ] || echo '{"name":"kb-lsp-code-server","private":true}' > package.json
export npm_config_yes=true
npm install --no-save --no-audit --no-fund --unsafe-perm --foreground-scripts=false \
  --dangerously-allow-all-scripts "code-server@$VERSION" >"$DEST/install.log" 2>&1 || {
  tail -40 "$DEST/install.log" >&2
  exit 1
}
"$BIN" --version
