# amber: `make bench` and `make test` work on a fresh machine with Python 3.10+ and Rust.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
MATURIN := $(VENV)/bin/maturin
SCALE ?= 1
FUZZ_SECONDS ?= 600
SMOKE_FUZZ_SECONDS ?= 30
CARGO_FUZZ := $(CURDIR)/.tools/bin/cargo-fuzz

.PHONY: all venv build build-release test test-rust test-python fuzz-smoke fuzz fuzz-rust \
        fuzz-python lint bench clean

all: test

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet "maturin>=1.7,<2"

venv: $(PY)

# Debug build for tests: overflow checks and debug assertions stay on.
build: $(PY)
	$(MATURIN) develop --quiet --extras test,contrib-test,lint,fuzz

build-release: $(PY)
	$(MATURIN) develop --quiet --release --extras bench,contrib-test

test: build test-rust test-python fuzz-smoke

test-rust:
	cargo test --workspace --exclude amber-py --quiet

test-python:
	$(PY) -m pytest -q

# A short run of both fuzzers on every `make test`; `make fuzz` runs them for longer.
fuzz-smoke:
	$(MAKE) --no-print-directory fuzz-rust FUZZ_SECONDS=$(SMOKE_FUZZ_SECONDS)
	$(MAKE) --no-print-directory fuzz-python FUZZ_SECONDS=$(SMOKE_FUZZ_SECONDS)

fuzz: build
	$(MAKE) --no-print-directory fuzz-rust fuzz-python

$(CARGO_FUZZ):
	cargo install --quiet --locked --root .tools cargo-fuzz

# Both targets share FUZZ_SECONDS: half each.
RUST_FUZZ_TARGETS := decode envelope

fuzz-rust: $(CARGO_FUZZ) $(PY)
	cd fuzz && RUSTC_BOOTSTRAP=1 $(CARGO_FUZZ) build --sanitizer address
	for target in $(RUST_FUZZ_TARGETS); do \
		$(PY) fuzz/seed_corpus.py fuzz/corpus/$$target && \
		(cd fuzz && RUSTC_BOOTSTRAP=1 $(CARGO_FUZZ) run --sanitizer address $$target \
			corpus/$$target -- -max_total_time=$$(( $(FUZZ_SECONDS) / 2 )) -max_len=4096 \
			-print_final_stats=1) || exit 1; \
	done

fuzz-python: $(PY)
	$(PY) fuzz/seed_corpus.py fuzz/corpus/python
	$(PY) fuzz/atheris_loads.py fuzz/corpus/python -max_total_time=$(FUZZ_SECONDS) \
		-max_len=4096 -print_final_stats=1

lint: build
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --quiet -- -D warnings
	$(VENV)/bin/ruff check python tests bench fuzz
	$(VENV)/bin/ruff format --check python tests bench fuzz
	$(VENV)/bin/mypy
	$(PY) -m mypy.stubtest amber._amber

bench: build-release
	$(PY) bench/run.py --scale $(SCALE) --require amber --out bench/results
	$(PY) bench/compression.py --scale $(SCALE) --out bench/results/compression.md
	$(PY) bench/stream_memory.py --out bench/results/streams.md
	$(PY) bench/integrations.py --out bench/results

clean:
	rm -rf target fuzz/target $(VENV) .tools
