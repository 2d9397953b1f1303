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

.PHONY: all venv build build-release test test-rust test-python test-pythons test-core \
        wheel test-wheel test-generic fuzz-smoke fuzz fuzz-rust fuzz-python lint lint-checks bench \
        bench-pythons instructions check-ahead clean

# The CPythons amber supports. `make test` runs the full suite in $(VENV) (made with
# $(PYTHON)) and CORE_TESTS on each other version it finds, as `python3.X` on PATH or through
# pyenv, in a virtual environment of its own (.venv-py3.X, a debug build as $(VENV) has).
# A version it cannot find is named at the end, not skipped in silence.
PYTHON_VERSIONS := 3.10 3.11 3.12 3.13
# The core of the suite: round trips, test vectors, hostile input, classes, out-of-band
# buffers, and the tests of the fast paths that read CPython's private layouts, which change
# between versions (dict tables, str kinds, int digits).
CORE_TESTS := tests/test_roundtrip.py tests/test_vectors.py tests/test_hostile.py \
	tests/test_hostile_classes.py tests/test_classes.py tests/test_out_of_band.py \
	tests/test_dict_templates.py tests/test_cpython_layouts.py tests/test_class_patterns.py \
	tests/test_parts.py tests/test_wide_str.py tests/test_slot_reads.py tests/test_packed.py
# Prints the interpreter of version $$v (its sys.executable), or nothing. pyenv's shims
# answer only for the versions pyenv is set to, hence PYENV_VERSION.
FIND_PYTHON = python$$v -c 'import sys; print(sys.executable)' 2>/dev/null || \
	PYENV_VERSION=$$v pyenv exec python$$v -c 'import sys; print(sys.executable)' 2>/dev/null

all: test

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet "maturin>=1.9,<2"

venv: $(PY)

# Debug build for tests: overflow checks and debug assertions stay on.
build: $(PY)
	$(MATURIN) develop --quiet --extras test,contrib-test,lint,fuzz

build-release: $(PY)
	$(MATURIN) develop --quiet --release --extras bench,contrib-test

test: build lint-checks test-rust test-python test-pythons check-ahead test-wheel test-generic \
	fuzz-smoke js-test

test-rust:
	cargo test --workspace --exclude amber-py --quiet

test-python:
	$(PY) -m pytest -q

# The core suite on every other supported CPython found; its summary names those not found.
test-pythons: $(PY)
	@default=$$($(PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])'); \
	tested=""; missing=""; \
	for v in $(PYTHON_VERSIONS); do \
		[ "$$v" = "$$default" ] && continue; \
		exe=$$($(FIND_PYTHON)); \
		if [ -z "$$exe" ]; then missing="$$missing $$v"; continue; fi; \
		echo "== CPython $$v ($$exe): core suite in .venv-py$$v"; \
		$(MAKE) --no-print-directory test-core PYV=$$v PYEXE="$$exe" || exit 1; \
		tested="$$tested $$v"; \
	done; \
	echo "CPython $$default: full suite in $(VENV)"; \
	echo "CPython core suite passed on:$${tested:- none}"; \
	if [ -n "$$missing" ]; then \
		echo "CPython NOT FOUND, so NOT TESTED:$$missing (neither python3.X nor pyenv has it)"; \
	fi

# One interpreter: `make test-core PYV=3.12 PYEXE=python3.12`. maturin builds into the shared
# cargo target dir; only amber-py and pyo3 are rebuilt per interpreter.
test-core: $(PY)
	@test -x .venv-py$(PYV)/bin/python || { $(PYEXE) -m venv .venv-py$(PYV) && \
		.venv-py$(PYV)/bin/pip install --quiet --upgrade pip; }
	VIRTUAL_ENV=$(CURDIR)/.venv-py$(PYV) $(MATURIN) develop --quiet --extras test
	.venv-py$(PYV)/bin/python -m pytest -q -p no:cacheprovider $(CORE_TESTS)

# Wheels are linked by zig (the `ziglang` package from PyPI) against glibc 2.17, so they are
# tagged manylinux2014 and install on Linux distributions older than the one that built them;
# linked natively, they would need this machine's glibc. maturin finds zig next to the venv's
# python on PATH.
ZIG := $(VENV)/bin/python-zig
MANYLINUX := --zig --compatibility manylinux2014
WITH_ZIG := PATH=$(CURDIR)/$(VENV)/bin:$$PATH
# The newest glibc symbol version manylinux2014 allows.
MANYLINUX_GLIBC := 2.17

$(ZIG): $(PY)
	$(PIP) install --quiet "ziglang>=0.13,<0.18"

# Release wheels, one per supported CPython found (as test-pythons finds them), and the sdist,
# into dist/. amber reads CPython's private layouts, so a wheel is for one version (not abi3).
wheel: $(PY) $(ZIG)
	@interpreters=""; \
	for v in $(PYTHON_VERSIONS); do \
		exe=$$($(FIND_PYTHON)); \
		if [ -n "$$exe" ]; then interpreters="$$interpreters -i $$exe"; \
		else echo "CPython $$v NOT FOUND: no wheel for it"; fi; \
	done; \
	echo "$(MATURIN) build --release $(MANYLINUX) --out dist$$interpreters"; \
	$(WITH_ZIG) $(MATURIN) build --release $(MANYLINUX) --out dist $$interpreters
	$(MATURIN) sdist --out dist

# What a user installs, checked on every `make test`: the wheel (a debug-profile one: the
# release profile's fat LTO would add minutes to each run; `make wheel` builds those), linked
# for manylinux2014 as `make wheel` links them, with no glibc symbol newer than 2.17, installed
# alone, from no index, into a new virtual environment, where tests/_wheel_smoke.py checks
# `import amber`, the `amber` CLI, py.typed, the stubs, the metadata, the platform tag and that
# nothing needs a test-only package; then mypy checks a user's code against the installed
# stubs. The sdist must hold everything a build needs: a wheel is built from its unpacked copy
# too.
WHEEL_TEST := target/wheel-test
test-wheel: $(PY) $(ZIG)
	rm -rf $(WHEEL_TEST)
	$(WITH_ZIG) $(MATURIN) build --quiet --profile dev $(MANYLINUX) -i $(PY) --out $(WHEEL_TEST)
	mkdir -p $(WHEEL_TEST)/files
	cd $(WHEEL_TEST)/files && $(CURDIR)/$(PY) -m zipfile -e ../*.whl .
	newest=$$(objdump -T $(WHEEL_TEST)/files/amber/_amber*.so | grep -o 'GLIBC_[0-9.]*' | \
		sed 's/GLIBC_//' | sort -uV | tail -1); \
	echo "newest glibc symbol version: $$newest"; \
	test "$$(printf '%s\n%s\n' "$$newest" $(MANYLINUX_GLIBC) | sort -V | tail -1)" = \
		"$(MANYLINUX_GLIBC)" || { echo "needs glibc $$newest > $(MANYLINUX_GLIBC)"; exit 1; }
	$(MATURIN) sdist --out $(WHEEL_TEST)/sdist
	mkdir -p $(WHEEL_TEST)/unpacked
	tar -xzf $(WHEEL_TEST)/sdist/*.tar.gz -C $(WHEEL_TEST)/unpacked
	cd $(WHEEL_TEST)/unpacked/*/ && CARGO_TARGET_DIR=$(CURDIR)/target $(CURDIR)/$(MATURIN) build \
		--quiet --profile dev -i $(CURDIR)/$(PY) --out $(CURDIR)/$(WHEEL_TEST)/from-sdist
	$(PY) -m venv $(WHEEL_TEST)/venv
	$(WHEEL_TEST)/venv/bin/pip install --quiet --no-index --find-links $(WHEEL_TEST) \
		$(WHEEL_TEST)/*.whl
	cp tests/_wheel_smoke.py $(WHEEL_TEST)/
	cd $(WHEEL_TEST) && venv/bin/python -I _wheel_smoke.py work
	printf 'import amber\n\ndata: bytes = amber.dumps({"a": [1]})\nback: object = amber.loads(data)\n' \
		> $(WHEEL_TEST)/typed_ok.py
	printf 'import amber\n\nwrong: int = amber.dumps(1)\n' > $(WHEEL_TEST)/typed_bad.py
	cd $(WHEEL_TEST) && $(CURDIR)/$(VENV)/bin/mypy --strict --no-incremental \
		--python-executable venv/bin/python typed_ok.py
	cd $(WHEEL_TEST) && ! $(CURDIR)/$(VENV)/bin/mypy --strict --no-incremental \
		--python-executable venv/bin/python typed_bad.py > mypy_bad.txt
	grep -q 'Incompatible types in assignment (expression has type "bytes"' \
		$(WHEEL_TEST)/mypy_bad.txt
	@echo "wheel and sdist: built, installed alone, checked"

# The build for CPythons whose private layouts amber does not know (3.14 and later, see
# crates/amber-py/build.rs): the fast paths compiled out, forced here by
# AMBER_GENERIC_LAYOUTS=1 on the default interpreter and installed from a wheel into a venv of
# its own. It must pass the core suite, and write the same bytes as the usual build for a
# corpus of the values where the layouts matter (tests/_same_bytes.py).
GENERIC := target/generic
test-generic: $(PY)
	rm -rf $(GENERIC)/wheel
	AMBER_GENERIC_LAYOUTS=1 $(MATURIN) build --quiet --profile dev -i $(PY) --out $(GENERIC)/wheel
	@test -x $(GENERIC)/venv/bin/python || $(PY) -m venv $(GENERIC)/venv
	$(GENERIC)/venv/bin/pip install --quiet "$$(echo $(GENERIC)/wheel/*.whl)[test]"
	$(GENERIC)/venv/bin/pip install --quiet --force-reinstall --no-deps $(GENERIC)/wheel/*.whl
	AMBER_GENERIC_LAYOUTS=1 $(GENERIC)/venv/bin/python -m pytest -q -p no:cacheprovider \
		$(CORE_TESTS)
	$(PY) tests/_same_bytes.py > $(GENERIC)/fast.txt
	$(GENERIC)/venv/bin/python tests/_same_bytes.py > $(GENERIC)/generic.txt
	cmp $(GENERIC)/fast.txt $(GENERIC)/generic.txt
	@echo "generic build: core suite passed; same bytes as the fast build for" \
		"$$(wc -l < $(GENERIC)/fast.txt) payloads"

# CPythons not installed here, checked by compiling for them: 3.14 (whose layouts amber does
# not know, so the generic paths) and 3.14t, free-threaded (the same, and importing the module
# turns the GIL back on). pyo3 reads the interpreter's description from a file instead of
# running it. (pyo3 itself refuses free-threaded builds before 3.14.)
AHEAD := target/ahead
check-ahead:
	@mkdir -p $(AHEAD)
	@for target in 3.14: 3.14:Py_GIL_DISABLED; do \
		version=$${target%%:*}; flags=$${target#*:}; \
		printf '%s\n' implementation=CPython version=$$version shared=true abi3=false \
			build_flags=$$flags suppress_build_script_link_lines=false pointer_width=64 \
			> $(AHEAD)/pyo3-$$version$$flags.cfg; \
		echo "== compile for CPython $$version $${flags:+($$flags)}"; \
		PYO3_CONFIG_FILE=$(CURDIR)/$(AHEAD)/pyo3-$$version$$flags.cfg cargo clippy --quiet \
			-p amber-py --target-dir $(AHEAD)/target -- -D warnings || exit 1; \
	done

# A short run of both fuzzers on every `make test`; `make fuzz` runs them for longer.
fuzz-smoke:
	$(MAKE) --no-print-directory fuzz-rust FUZZ_SECONDS=$(SMOKE_FUZZ_SECONDS)
	$(MAKE) --no-print-directory fuzz-python FUZZ_SECONDS=$(SMOKE_FUZZ_SECONDS)

fuzz: build
	$(MAKE) --no-print-directory fuzz-rust fuzz-python

$(CARGO_FUZZ):
	cargo install --quiet --locked --root .tools cargo-fuzz

# The targets share FUZZ_SECONDS equally.
RUST_FUZZ_TARGETS := decode envelope ext stream
RUST_FUZZ_SECONDS = $$(( $(FUZZ_SECONDS) / $(words $(RUST_FUZZ_TARGETS)) ))

fuzz-rust: $(CARGO_FUZZ) $(PY)
	cd fuzz && RUSTC_BOOTSTRAP=1 $(CARGO_FUZZ) build --sanitizer address
	for target in $(RUST_FUZZ_TARGETS); do \
		$(PY) fuzz/seed_corpus.py fuzz/corpus/$$target && \
		(cd fuzz && RUSTC_BOOTSTRAP=1 $(CARGO_FUZZ) run --sanitizer address $$target \
			corpus/$$target -- -max_total_time=$(RUST_FUZZ_SECONDS) -max_len=4096 \
			-print_final_stats=1) || exit 1; \
	done

fuzz-python: $(PY)
	$(PY) fuzz/seed_corpus.py fuzz/corpus/python
	$(PY) fuzz/atheris_loads.py fuzz/corpus/python -max_total_time=$(FUZZ_SECONDS) \
		-max_len=4096 -print_final_stats=1

# `make test` runs the checks on the build it has just made; `make lint` builds first.
lint: build lint-checks

lint-checks: $(PY)
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --quiet -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --document-private-items --quiet
	$(VENV)/bin/ruff check python tests bench fuzz
	$(VENV)/bin/ruff format --check python tests bench fuzz
	$(VENV)/bin/mypy
	$(PY) -m mypy.stubtest amber._amber

bench: build-release js-bench
	$(PY) bench/run.py --scale $(SCALE) --require amber --out bench/results
	$(PY) bench/keywords.py --out bench/results/keywords.md
	$(PY) bench/gc_on.py --scale $(SCALE) --out bench/results/gc_on.md
	$(PY) bench/fresh_strings.py --out bench/results/fresh_strings.md
	$(PY) bench/compression.py --scale $(SCALE) --out bench/results/compression.md
	$(PY) bench/stream_memory.py --out bench/results/streams.md
	$(PY) bench/stream_throughput.py --out bench/results/stream_throughput.md
	$(PY) bench/integrations.py --out bench/results
	$(PY) bench/threads.py > bench/results/threads.md
	$(PY) bench/class_patterns.py --out bench/results/class_patterns.md
	$(INSTRUCTIONS)

# Instructions per call of the small payloads (valgrind), which timing noise hides: see
# bench/instructions.py. Part of `make bench`; alone, after a release build.
INSTRUCTIONS := $(PY) bench/instructions.py --codecs amber,amber_refs,amber_norefs,orjson,ssrjson,msgspec \
	--out bench/results/instructions.md
instructions: build-release
	$(INSTRUCTIONS)

# The side-by-side table on every supported CPython found (the default one included), each
# in a release build of its own (.venv-bench-py3.X), with the fast peers; the ratios to the
# fastest peer, version by version, go to bench/results/pythons.md.
BENCH_PYTHONS_CODECS := amber,pickle,msgspec,orjson,ssrjson,ormsgpack,pyfory
bench-pythons: $(PY)
	@runs=""; \
	for v in $(PYTHON_VERSIONS); do \
		exe=$$($(FIND_PYTHON)); \
		if [ -z "$$exe" ]; then echo "CPython $$v NOT FOUND: not measured"; continue; fi; \
		venv=.venv-bench-py$$v; \
		test -x $$venv/bin/python || { $$exe -m venv $$venv && \
			$$venv/bin/pip install --quiet --upgrade pip; } || exit 1; \
		VIRTUAL_ENV=$(CURDIR)/$$venv $(MATURIN) develop --quiet --release --extras bench || exit 1; \
		$$venv/bin/python bench/run.py --scale $(SCALE) --codecs $(BENCH_PYTHONS_CODECS) \
			--no-refs --no-arrays --no-memory --no-readme --out target/bench-py$$v || exit 1; \
		runs="$$runs target/bench-py$$v/results.json"; \
	done; \
	$(PY) bench/pythons.py $$runs > bench/results/pythons.md

clean:
	rm -rf target fuzz/target $(VENV) .venv-py3.* .venv-bench-py3.* .tools js/node_modules js/dist

# The TypeScript implementation (js/, see js/README.md). Its dependencies come from
# js/package-lock.json (npm ci, again whenever the lock changes); its viewer test drives
# Debian's chromium, installed here when missing. The differential and viewer tests run the
# Python side from $(VENV), so js-test builds it first.
JS_DIR := js
JS_FUZZ_SECONDS ?= 8
JS_CHROMIUM := /usr/bin/chromium
JS_DEPS := $(JS_DIR)/node_modules/.amber-npm-ci

.PHONY: js-build js-chromium js-test js-bench

$(JS_DEPS): $(JS_DIR)/package-lock.json $(JS_DIR)/package.json
	cd $(JS_DIR) && npm ci --no-audit --no-fund
	touch $@

js-build: $(JS_DEPS)
	cd $(JS_DIR) && npx tsc -p tsconfig.json && node scripts/bundle-viewer.mjs

js-chromium:
	@test -x $(JS_CHROMIUM) || { apt-get update -qq && apt-get install -y -qq chromium; }

js-test: build js-build js-chromium
	cd $(JS_DIR) && AMBER_JS_FUZZ_SECONDS=$(JS_FUZZ_SECONDS) AMBER_CHROMIUM=$(JS_CHROMIUM) \
		node --test --test-reporter=spec dist/test/*.test.js

# Node timings against msgpackr, @msgpack/msgpack, cbor-x and JSON on the seed payloads
# (made by bench/payloads.py), into bench/results/js.md.
js-bench: build-release js-build
	rm -rf target/js-bench && $(PY) $(JS_DIR)/bench/export_payloads.py --scale $(SCALE) --out target/js-bench
	cd $(JS_DIR) && node dist/bench/run.js ../target/js-bench ../bench/results/js.md
