# One virtual environment in the checkout; every target installs it first if needed.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: install test lint train clean-venv

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements.txt
	# the checkout itself, editable: registers TensorBoard's ATTENTION tab (pyproject.toml)
	$(VENV)/bin/pip install --quiet --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

# The suite over every core (pytest-xdist), one worker a core; a module whose tests share a costly
# fixture keeps them on one worker (xdist_group marks, --dist loadgroup); the slowest 15 are listed
# at the end. docs/tests.md says more.
test: $(STAMP)
	$(VENV)/bin/python -m pytest -n auto --dist loadgroup --durations=15

# ruff's checks and formatter (pyproject.toml says which), then mypy on the packages below the
# entry points; `ruff format .` and `ruff check --fix .` mend most of what the first two find
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# A faster allocator than glibc's malloc: large tensors stop page-faulting on every
# allocation (bf16 training 1.29x faster with tcmalloc in bench/train_speed.py). tcmalloc where the system has
# it (Debian/Ubuntu: apt install libtcmalloc-minimal4), else the mimalloc wheel of
# requirements.txt. Expanded when the recipe runs, after the virtual environment exists.
TCMALLOC = $(wildcard /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4)
MIMALLOC = $(abspath $(wildcard $(VENV)/lib/python3*/site-packages/cmeel.prefix/lib/libmimalloc.so))
ALLOCATOR = $(or $(TCMALLOC),$(MIMALLOC))

# Extra Hydra overrides: make train ARGS="experiment=ci"
train: $(STAMP)
	LD_PRELOAD=$(ALLOCATOR) $(VENV)/bin/python train.py $(ARGS)

clean-venv:
	rm -rf $(VENV)
