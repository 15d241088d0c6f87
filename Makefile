# Everything runs in a project-local virtual environment (.venv) installed by
# uv from uv.lock; uv itself is bootstrapped into .tools/ with pip.
UV_VERSION := 0.13.9
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
PYTHON := $(VENV)/bin/python
# Never let uv fetch a Python build: the machine's Python 3.11 is the one to use.
export UV_PYTHON_DOWNLOADS := never
# TFX 1.16 needs Keras 2; TensorFlow 2.16 picks Keras 3 unless told otherwise.
export TF_USE_LEGACY_KERAS := 1

# Extra arguments for `make run` / `make compile`, e.g. ARGS="--data my/csvs --label y".
ARGS ?=

# The report's browser test drives Debian's chromium; `make test` installs it
# (as root, or through sudo), `make run` does not need it.
CHROMIUM := /usr/bin/chromium
# The Spark engine's tests start JVMs: Debian's Java 17 runtime, installed the
# same way; `make run` (Beam) does not need it.
JAVA := /usr/lib/jvm/java-17-openjdk-amd64/bin/java
# `make image` and the container tests: Debian's podman (rootful), runc, and
# debootstrap for a local base image where the public ones cannot be pulled,
# catatonit for the pause process of `podman kube play`'s pods.
PODMAN := /usr/bin/podman
CATATONIT := /usr/bin/catatonit
# The multi-worker Trainer test gives each worker process an address of its own and
# resolves the training job's host names to them, as a cluster's pods and DNS do:
# Debian's socket_wrapper and nss_wrapper (cwrap), preloaded in those processes only.
SOCKET_WRAPPER := /usr/lib/x86_64-linux-gnu/libsocket_wrapper.so
NSS_WRAPPER := /usr/lib/x86_64-linux-gnu/libnss_wrapper.so
# What KFP's UI renders the project's Markdown with (markdown-to-jsx and React at the
# versions of KFP's frontend lock), for the tests: npm installs them from the lock.
NODE := /usr/bin/node
UI_READERS := tests/ui_readers
# The image target `make image` builds: cpu (every component) or gpu (the Trainer).
TARGET ?= cpu
APT_INSTALL = $(if $(filter 0,$(shell id -u)),,sudo) apt-get update -qq && \
	DEBIAN_FRONTEND=noninteractive $(if $(filter 0,$(shell id -u)),,sudo -E) \
	apt-get install -y -qq --no-install-recommends
IMPORT_TREE := build/import-tree
# `make test` on every core (at most 4: each worker's pipeline runs take GBs of
# memory), a test module per worker at a time, heaviest first (tests/conftest.py).
PYTEST_PARALLEL := --numprocesses auto --maxprocesses 4 --dist loadscope --no-loadscope-reorder

.PHONY: run compile test lint docs setup browser jvm containers cwrap ui-readers image lock clean

run: setup  ## Run the pipeline locally on the bundled data (or ARGS).
	$(PYTHON) -m tfrecord_pipelines run $(ARGS)

compile: setup  ## Write the Kubeflow Pipelines v2 spec.
	$(PYTHON) -m tfrecord_pipelines compile $(ARGS)

test: setup lint browser jvm containers cwrap ui-readers  ## Lint, then run every test on both cores: the docs build, pipeline runs, a browser, Spark and the image included.
	$(PYTHON) -m pytest $(PYTEST_PARALLEL)

lint: setup
	$(VENV)/bin/ruff check components pipelines tests benchmarks setup.py docs docker examples
	@# lint-imports reads the wheel's tree: only there is components/ inside
	@# tfrecord_pipelines (setup.py maps the folders; grimp walks directories).
	@# uv builds the wheel from a fresh sdist, so no stale build/ file slips in.
	rm -rf $(IMPORT_TREE)
	$(UV) build --quiet --out-dir $(IMPORT_TREE)
	$(PYTHON) -m zipfile -e $(IMPORT_TREE)/*.whl $(IMPORT_TREE)
	cd $(IMPORT_TREE) && PYTHONPATH=. $(abspath $(VENV))/bin/lint-imports \
		$(abspath pyproject.toml) --no-cache

docs: setup  ## Serve the docs site on http://127.0.0.1:8000, rebuilt as you edit.
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8000

setup: $(VENV)/.synced

browser: $(CHROMIUM)

$(CHROMIUM):
	$(APT_INSTALL) chromium

jvm: $(JAVA)  ## Install Java 17 for the Spark engine (--engine spark).

$(JAVA):
	$(APT_INSTALL) openjdk-17-jre-headless

cwrap: $(SOCKET_WRAPPER) $(NSS_WRAPPER)  ## Install socket_wrapper and nss_wrapper: each trainer worker's own address and host name in tests.

$(SOCKET_WRAPPER) $(NSS_WRAPPER):
	$(APT_INSTALL) libsocket-wrapper libnss-wrapper

ui-readers: $(UI_READERS)/node_modules/.package-lock.json  ## Install what KFP's UI renders Markdown with, for the tests (npm, from the lock).

$(UI_READERS)/node_modules/.package-lock.json: $(UI_READERS)/package-lock.json | $(NODE)
	cd $(UI_READERS) && NODE_EXTRA_CA_CERTS=$${NODE_EXTRA_CA_CERTS:-$${SSL_CERT_FILE:-}} \
		npm ci --no-audit --no-fund --ignore-scripts --loglevel=error

$(NODE):
	$(APT_INSTALL) nodejs npm

containers: $(PODMAN) $(CATATONIT)  ## Install podman, runc, debootstrap, catatonit: builds and runs the component image.

$(PODMAN) $(CATATONIT):
	$(APT_INSTALL) podman runc debootstrap catatonit

image: containers | $(UV)  ## Build the component image with podman: TARGET=cpu (default) or gpu.
	python3 docker/build_image.py --target $(TARGET)

$(UV):
	python3 -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

# Bytecode compiled once, at install: where PYTHONDONTWRITEBYTECODE is set (this
# machine's and CI's environment) every process would otherwise compile the ~7,800
# modules TensorFlow and TFX import again, about 9 CPU-seconds each.
$(VENV)/.synced: uv.lock pyproject.toml | $(UV)
	$(UV) sync --frozen --compile-bytecode
	touch $@

lock: $(UV)  ## Re-resolve uv.lock after editing pyproject.toml.
	$(UV) lock

clean:
	rm -rf output build .pytest_cache .ruff_cache
