#!/usr/bin/env bash
# The one-shot device check (for a session lent a GPU through the device tool):
#   1. a venv with the gpu extra, 2. every `gpu`-marked test (kernels vs their CPU references),
#   3. each chapter's GPU-profile run; metrics with provenance land in data/results/NN-gpu.json.
# Usage on the GPU machine, from the repository root:  bash .ci/gpu_check.sh [CHAPTER ...]
# Output for review goes to ${OUT:-_build/gpu}/ (test log, executed notebooks, metrics).
set -uo pipefail
out=${OUT:-_build/gpu}
mkdir -p "$out" data/results
python3 -m venv .venv-gpu
.venv-gpu/bin/python -m pip install --quiet --upgrade "pip>=24"
.venv-gpu/bin/python -m pip install --quiet -c constraints.txt -e ".[test,gpu]"
.venv-gpu/bin/python -c "import icml25.common as c; print('gpu_available', c.gpu_available(), c.device_name())" | tee "$out/device.txt"
.venv-gpu/bin/python -m pytest tests -m gpu -q -p no:cacheprovider -rs 2>&1 | tee "$out/gpu-tests.log"
chapters=("$@")
if [ ${#chapters[@]} -eq 0 ]; then
  for nb in notebooks/[0-9][0-9]_*.ipynb; do chapters+=("$(basename "$nb" | cut -c1-2)"); done
fi
for ch in "${chapters[@]}"; do
  nb=$(ls notebooks/${ch}_*.ipynb | head -1)
  start=$(date +%s)
  ICML25_RESULTS_DIR="$PWD/data/results" .venv-gpu/bin/papermill --log-level WARNING --cwd notebooks \
    -p PROFILE gpu -p SEED 0 "$nb" "$out/$(basename "$nb")" && status=ok || status=FAILED
  echo "chapter $ch: $status in $(( $(date +%s) - start )) s" | tee -a "$out/chapters.log"
  cp data/results/${ch}-gpu.json "$out/" 2>/dev/null || true
done
