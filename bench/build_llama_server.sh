#!/usr/bin/env bash
# Build llama.cpp's own `llama-server` (CPU) from the llama.cpp source vendored in the pinned
# llama-cpp-python sdist, so bench/judge_server.py compares tui-rater's engine with the server built from
# the same llama.cpp commit the engine runs on. Offline: no web UI (no npm, no Hugging Face download), no curl.
#
#   bench/build_llama_server.sh                 # builds in the foreground
#   BG=1 bench/build_llama_server.sh            # in the background (nice 19, setsid), log in $BUILD_DIR/build.log
#
# Environment: SRC (the pruned sdist tarball; default ../shared/bench-tools/...), BUILD_DIR (default
# /tmp/llama-server-build), JOBS (default 2), NICE (default 19: the machine is shared, tests go first).
# The binary ends up at $BUILD_DIR/build/bin/llama-server; $BUILD_DIR/build.done holds "rc=N secs=S".
# About 25 minutes on 2 busy cores.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=${SRC:-$HERE/../../shared/bench-tools/llama-cpp-python-0.3.36-src-pruned.tar.xz}
BUILD_DIR=${BUILD_DIR:-/tmp/llama-server-build}
JOBS=${JOBS:-2}
NICE=${NICE:-19}
LLAMA=$BUILD_DIR/llama_cpp_python-0.3.36/vendor/llama.cpp

if [ "${BG:-0}" = 1 ]; then
    mkdir -p "$BUILD_DIR"
    rm -f "$BUILD_DIR/build.done"
    # setsid: the build outlives the shell that started it; its exit status lands in build.done.
    setsid nohup bash -c 'start=$(date +%s); BG=0 "$0" > "$1/build.log" 2>&1; echo "rc=$? secs=$(( $(date +%s) - start ))" > "$1/build.done"' \
        "$0" "$BUILD_DIR" > /dev/null 2>&1 &
    echo "building in the background: tail -f $BUILD_DIR/build.log; done when $BUILD_DIR/build.done exists"
    exit 0
fi

[ -f "$SRC" ] || { echo "no source tarball at $SRC (set SRC=...)" >&2; exit 2; }
mkdir -p "$BUILD_DIR"
if [ ! -f "$LLAMA/CMakeLists.txt" ]; then
    tar xJf "$SRC" -C "$BUILD_DIR"
fi
# Release, native CPU flags (the engine's wheel is built the same way on this machine), static so the binary
# runs without an LD_LIBRARY_PATH; the UI options keep cmake from fetching or building the web UI.
nice -n "$NICE" cmake -S "$LLAMA" -B "$BUILD_DIR/build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=ON \
    -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_SERVER=ON \
    -DLLAMA_BUILD_TOOLS=ON \
    -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_CURL=OFF \
    -DLLAMA_OPENSSL=OFF
nice -n "$NICE" cmake --build "$BUILD_DIR/build" --target llama-server -j "$JOBS"
"$BUILD_DIR/build/bin/llama-server" --version
