# One virtual environment in the checkout; every target installs it first if needed.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: install test train clean-venv

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements.txt
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(VENV)/bin/python -m pytest

# Extra Hydra overrides: make train ARGS="experiment=ci"
train: $(STAMP)
	$(VENV)/bin/python train.py $(ARGS)

clean-venv:
	rm -rf $(VENV)
