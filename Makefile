# ICML 2025, executable — every job of the book. `make help` lists them.
# The two set-up commands of the README are `make book` and `make test`; both create .venv.

SHELL       := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON      ?= python3
VENV        := .venv
BIN         := $(VENV)/bin
STAMP       := $(VENV)/.installed
LAB_STAMP   := $(VENV)/.installed-lab
LAB_ARGS    ?=
PROFILE     ?= cpu
SEED        ?= 0
CHAPTER     ?=
JOBS        ?= auto
OFFLINE     := .ci/offline
ASSETS      := _build/offline-assets/.stamp
CHROMIUM    ?= /usr/bin/chromium
BOOK_HTML   ?= _build/html
NOTEBOOKS   := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))
EXECUTED    := $(patsubst notebooks/%,_build/executed/%,$(NOTEBOOKS))
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: help venv learn git-filter execute-all test test-pytest test-render test-browser test-seeds book pdf system-deps execute assignments grade book-nosolutions lab bench lock clean
.DEFAULT_GOAL := help

help:
	@echo "make book            build the HTML book in _build/html (executes changed chapters, cpu profile)"
	@echo "make test            unit + kernel + notebook tests and a render check, offline (what CI runs)"
	@echo "make test-seeds      every chapter again with SEED=1 and SEED=2 (Ray fan-out)"
	@echo "make execute-all PROFILE=cpu SEEDS=\"0 1 2\"   every (chapter, seed) as a Ray task, records with provenance"
	@echo "make pdf             the whole book as one PDF, _build/pdf/book.pdf (headless chromium)"
	@echo "make test-browser    open every page of a built book in chromium, offline (BOOK_HTML=_build/html)"
	@echo "make execute CHAPTER=02 PROFILE=gpu [SEED=0]   run one chapter with papermill, record metrics"
	@echo "make assignments     student and instructor editions with autograders in _build/assignments/"
	@echo "make grade CHAPTER=02 SUBMISSIONS=dir   grade a folder of student notebooks offline (CSV of scores)"
	@echo "make book-nosolutions   the book with every solution removed (for a course site)"
	@echo "make learn CHAPTER=02   your own copy of a chapter's exercises in work/, opened in JupyterLab"
	@echo "make lab             JupyterLab on notebooks/ (LAB_ARGS passes options, e.g. --no-browser)"
	@echo "make bench           run benchmarks/*.py (results in benchmarks/results/)"
	@echo "make lock            regenerate constraints.txt and environment.yml from the venv"

# ---------------------------------------------------------------------------------------------
# Environment: one venv, installed from pyproject.toml under the pins of constraints.txt.
# ---------------------------------------------------------------------------------------------
venv: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[test]"
	@$(MAKE) --no-print-directory git-filter
	@touch $@ $(LAB_STAMP)

# The learner's install: the book's chapters, the classroom tools and JupyterLab (with
# jupyterlab-myst), not the test tooling (CUDA compiler wheels, playwright). `make test` installs
# a superset and marks this one done too.
$(LAB_STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[lab]"
	@$(MAKE) --no-print-directory git-filter
	@touch $@

# Outputs never enter git: nbstripout is this clone's git filter for *.ipynb (cell ids kept, so
# the committed notebooks are unchanged by it). Skipped outside a git checkout.
git-filter:
	@if git rev-parse --git-dir >/dev/null 2>&1 && test -x $(BIN)/nbstripout; then \
	  $(BIN)/nbstripout --install >/dev/null && \
	  git config filter.nbstripout.clean '"$(CURDIR)/$(BIN)/python" -m nbstripout --keep-id' && \
	  git config diff.ipynb.textconv '"$(CURDIR)/$(BIN)/python" -m nbstripout -t --keep-id'; \
	fi

lock: $(STAMP)
	$(BIN)/python .ci/lock.py

# ---------------------------------------------------------------------------------------------
# Tests (offline: .ci/offline runs them in a network namespace holding only loopback)
# ---------------------------------------------------------------------------------------------
test: $(STAMP) $(ASSETS) system-deps
	$(OFFLINE) $(MAKE) --no-print-directory test-pytest test-render test-browser BOOK_HTML=_build/test-render/_build/html

# Unit, kernel-compile, hygiene and pin tests, plus every chapter executed once: papermill
# (--prepare-only) injects PROFILE/SEED, nbval executes and validates; one xdist run.
test-pytest: _build/prepared/seed$(SEED)/.stamp
	rm -rf _build/executed-test
	rm -rf _build/results-test
	ICML25_PRERENDER=1 ICML25_RESULTS_DIR=$(CURDIR)/_build/results-test ICML25_EXECUTED_DIR=_build/executed-test $(BIN)/python -m pytest tests _build/prepared/seed$(SEED) --ignore=tests/fixtures --ignore=tests/browser -m "not slow" \
	  --nbval-lax --nbval-current-env --nbval-cell-timeout=900 -n $(JOBS) --dist loadfile \
	  -p no:cacheprovider -q -rs --durations=15

_build/prepared/seed%/.stamp: $(NOTEBOOKS) .ci/nbval_capture.py $(STAMP)
	@mkdir -p $(@D)
	@cp .ci/nbval_capture.py $(@D)/conftest.py
	@for nb in $(NOTEBOOKS); do \
	  $(BIN)/papermill --prepare-only --log-level WARNING -p PROFILE $(PROFILE) -p SEED $* \
	    "$$nb" "$(@D)/$$(basename $$nb)"; \
	done
	@touch $@

# The book rendered from the notebooks the nbval run executed (nothing executes again), with
# warnings as errors.
test-render: $(STAMP) $(ASSETS)
	$(BIN)/python .ci/stage_book.py _build/executed-test _build/test-src --results _build/results-test
	$(BIN)/jupyter-book build _build/test-src --path-output _build/test-render --warningiserror --nitpick --keep-going --quiet

# Every chapter again with SEED=1 and SEED=2, fanned out on Ray (every # Check: cell must hold);
# records in _build/results-seeds/, a table of status and wall time per task at the end.
test-seeds: $(STAMP)
	$(OFFLINE) $(BIN)/python -m icml25.runner --profile cpu --seeds 1 2 --results _build/results-seeds \
	  --out _build/executed-seeds

# make execute-all PROFILE=cpu|gpu SEEDS="0 1 2" [CHAPTERS="02 06"]: every (chapter, seed) as a Ray
# task (local cluster; RAY_ADDRESS for an existing one; gpu: one GPU per task); records as make
# execute writes them (cpu: _build/results, gpu: data/results); unchanged tasks are skipped.
SEEDS    ?= 0
CHAPTERS ?=
execute-all: $(STAMP)
	$(BIN)/python -m icml25.runner --profile $(PROFILE) --seeds $(SEEDS) $(if $(CHAPTERS),--chapters $(CHAPTERS),)

# ---------------------------------------------------------------------------------------------
# Executing chapters and building the book
# ---------------------------------------------------------------------------------------------
-include _build/deps.mk
_build/deps.mk: $(NOTEBOOKS) .ci/deps.py $(wildcard lib/*.py lib/*/*.py kernels/*.py)
	@mkdir -p $(@D)
	@$(PYTHON) .ci/deps.py $@

# One chapter, cpu profile, seed 0: what the book shows.
_build/executed/%.ipynb: | $(STAMP)
	@mkdir -p $(@D) _build/results
	@echo "executing $* (PROFILE=cpu SEED=0)"
	ICML25_PRERENDER=1 ICML25_RESULTS_DIR=$(CURDIR)/_build/results $(OFFLINE) $(BIN)/papermill --log-level WARNING --no-progress-bar \
	  --cwd notebooks -p PROFILE cpu -p SEED 0 notebooks/$*.ipynb $(@D)/.partial-$*.ipynb
	@mv $(@D)/.partial-$*.ipynb $@

# The render alone takes about a minute; executing the chapters is what takes long. To iterate on
# prose: .ci/stage_book.py --prose-from notebooks (its docstring). The sidebar links the notebooks'
# zip and, once `make pdf` printed it, _build/pdf/book.pdf (copied into the HTML as downloads/).
book: $(STAMP) $(EXECUTED) $(ASSETS)
	$(BIN)/python .ci/stage_book.py _build/executed _build/src --results _build/results --pdf _build/pdf/book.pdf
	$(BIN)/jupyter-book build _build/src --path-output . --warningiserror --nitpick --keep-going --quiet
	@echo "The book: file://$(CURDIR)/_build/html/index.html"

# MathJax 3, RequireJS and the Jupyter widget manager from the npm registry (exact versions,
# sha512 checked), served from the book's _static/ (_config.yml: html_static_path, mathjax_path,
# nb_ipywidgets_js). Never a CDN, at build or read time.
$(ASSETS): .ci/offline_assets.py .ci/offline_assets.widgets.js
	@command -v npm >/dev/null || $(MAKE) --no-print-directory system-deps
	$(PYTHON) .ci/offline_assets.py _build/offline-assets

# Debian packages the book's checks need: chromium (browser test, PDF; never a downloaded browser),
# npm (the assets) and bubblewrap (the grading sandbox; prlimit comes with util-linux). Installed
# once, as root or with sudo; without them the browser tests and the grading tests skip with a
# message saying so, and `make grade` refuses to grade.
system-deps:
	@need=""; command -v npm >/dev/null || need="$$need npm"; test -x $(CHROMIUM) || need="$$need chromium"; \
	command -v bwrap >/dev/null || need="$$need bubblewrap"; \
	if [ -n "$$need" ]; then \
	  sudo=$$( [ "$$(id -u)" = 0 ] && echo "" || echo "sudo -n" ); \
	  echo "installing$$need (apt-get)"; \
	  { $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$need; } \
	    || echo "system-deps: could not install$$need; the browser test, make pdf and make grade will skip or fail"; \
	fi

# Every page of _toc.yml in Debian's chromium (Playwright, file:// only, all other requests
# aborted): no failed request, no console error, math typeset, images and widgets shown, search,
# downloads and launch links; screenshots in _build/screenshots/, counts in _build/browser-report.json.
test-browser: $(STAMP)
	ICML25_BOOK_HTML=$(BOOK_HTML) $(BIN)/python -m pytest tests/browser/test_book_browser.py tests/browser/test_book_reading.py tests/browser/test_lab.py \
	  -p no:cacheprovider -q -rs

# The whole book as one PDF: the built HTML printed page by page by headless chromium, in
# _toc.yml order after a contents page with page numbers, concatenated with pypdf; the HTML is
# rendered again so that every page links the PDF (downloads/icml25-executable.pdf); then checked.
pdf: book system-deps
	$(OFFLINE) $(BIN)/python .ci/book_pdf.py _build/html _build/pdf/book.pdf
	$(BIN)/python .ci/stage_book.py _build/executed _build/src --results _build/results --pdf _build/pdf/book.pdf
	$(BIN)/jupyter-book build _build/src --path-output . --warningiserror --nitpick --keep-going --quiet
	ICML25_BOOK_HTML=_build/html ICML25_BOOK_PDF=_build/pdf/book.pdf $(OFFLINE) $(BIN)/python -m pytest \
	  tests/browser/test_book_pdf.py -p no:cacheprovider -q -rs
	@echo "The book as PDF: $(CURDIR)/_build/pdf/book.pdf"

# make execute CHAPTER=02 PROFILE=gpu: a GPU-profile run records its metrics in data/results/.
execute: $(STAMP)
	@test -n "$(CHAPTER)" || { echo "usage: make execute CHAPTER=02 PROFILE=cpu|gpu [SEED=0]"; exit 2; }
	@nb=$$(ls notebooks/$(CHAPTER)_*.ipynb 2>/dev/null | head -1); \
	test -n "$$nb" || { echo "no notebook notebooks/$(CHAPTER)_*.ipynb"; exit 2; }; \
	out=_build/executed-$(PROFILE)-seed$(SEED)/$$(basename $$nb); mkdir -p $$(dirname $$out); \
	results=$(CURDIR)/$$( [ "$(PROFILE)" = gpu ] && echo data/results || echo _build/results ); \
	echo "executing $$nb with PROFILE=$(PROFILE) SEED=$(SEED) -> $$out, metrics -> $$results"; \
	ICML25_RESULTS_DIR=$$results $(BIN)/papermill --log-level WARNING --no-progress-bar --cwd notebooks \
	  -p PROFILE $(PROFILE) -p SEED $(SEED) $$nb $$out

# ---------------------------------------------------------------------------------------------
# Classroom editions (book/instructor_guide.md): for every chapter with exercises, a student and an
# instructor edition with an otter-grader autograder, graded offline in a bubblewrap sandbox
# (system-deps installs it): GRADE_FLAGS="--jobs 2 --exercise-time 60" passes options to the grader.
#   make assignments                                  -> _build/assignments/{student,instructor}/NN_slug/
#   make grade CHAPTER=02 SUBMISSIONS=path/to/folder  -> _build/assignments/scores-02.csv
#   make book-nosolutions                             -> the book without solutions, _build/nosolutions/_build/html
# (also add assignments grade book-nosolutions to .PHONY and three lines to `make help`)
# ---------------------------------------------------------------------------------------------
assignments: $(STAMP)
	$(BIN)/python -m icml25.classroom assign --out _build/assignments

grade: $(STAMP)
	@test -n "$(CHAPTER)" -a -n "$(SUBMISSIONS)" || { echo "usage: make grade CHAPTER=02 SUBMISSIONS=folder-of-notebooks"; exit 2; }
	@ag=$$(ls _build/assignments/instructor/$(CHAPTER)_*/autograder.zip 2>/dev/null | head -1); \
	test -n "$$ag" || { echo "no autograder for chapter $(CHAPTER): run make assignments first"; exit 2; }; \
	$(BIN)/python -m icml25.classroom grade "$$ag" "$(SUBMISSIONS)" --csv _build/assignments/scores-$(CHAPTER).csv $(GRADE_FLAGS)

book-nosolutions: $(STAMP) $(EXECUTED) $(ASSETS)
	$(BIN)/python -m icml25.classroom reader _build/executed _build/executed-nosolutions
	$(BIN)/python .ci/stage_book.py _build/executed-nosolutions _build/src-nosolutions --results _build/results
	$(BIN)/jupyter-book build _build/src-nosolutions --path-output _build/nosolutions --warningiserror --nitpick --keep-going --quiet
	@echo "The book without solutions: file://$(CURDIR)/_build/nosolutions/_build/html/index.html"

# The chapters in JupyterLab (read-only use: outputs are stripped on commit by the git filter).
lab: $(LAB_STAMP)
	$(BIN)/jupyter lab notebooks/ $(LAB_ARGS)

# The learner's path: your own copy of a chapter in work/NN_slug/ (untracked; an existing copy
# is your work and is kept), the whole chapter with each solution replaced by its stub and each
# public check by grader.check("LABEL"), opened in JupyterLab. LAB_ARGS="--no-browser --port 8899".
learn: $(LAB_STAMP)
	@test -n "$(CHAPTER)" || { echo "usage: make learn CHAPTER=02 [LAB_ARGS=...]"; exit 2; }
	@nb=$$(ls notebooks/$(CHAPTER)_*.ipynb 2>/dev/null | head -1); \
	test -n "$$nb" || { echo "no notebook notebooks/$(CHAPTER)_*.ipynb"; exit 2; }; \
	$(BIN)/python -m icml25.learner "$$nb" --dest work && \
	name=$$(basename $$nb .ipynb) && \
	cd work/$$name && ICML25_RESULTS_DIR=$(CURDIR)/work/results $(CURDIR)/$(BIN)/jupyter lab $$name.ipynb $(LAB_ARGS)

bench: $(STAMP)
	@start=$$(date +%s); failed=""; \
	for b in benchmarks/[!_]*.py; do echo "== $$b"; $(BIN)/python $$b || failed="$$failed $$b"; done; \
	echo "== hot loops against this machine's measured limits (benchmarks/_summary.py)"; \
	$(BIN)/python benchmarks/_summary.py; \
	echo "make bench: $$(( $$(date +%s) - start )) s wall"; \
	if [ -n "$$failed" ]; then echo "failed:$$failed"; exit 1; fi

clean:
	rm -rf _build
