# The two commands a newcomer needs: `make demo` and `make test`.
CARGO ?= cargo
RELEASE := target/release

.PHONY: all build demo test lint headers bench clean

all: build

build:
	$(CARGO) build --release --workspace

## make demo: libnrt's microcode sequence on the simulated device, through our provider.
demo: build
	$(RELEASE)/nrt-pool bringup --provider $(RELEASE)/libnrtucode_extisa.so

## make test: unit, C-API, ABI and C-consumer tests (the ABI tests use the release build).
test: build
	$(CARGO) test --release --workspace

## make lint: formatting and clippy, warnings are errors.
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## make headers: regenerate include/*.h with cbindgen (then commit them).
headers:
	UPDATE_HEADERS=1 $(CARGO) test -p gpsimd-open --test headers_current

bench:
	@echo "make bench: no benchmarks are defined yet (the device-runtime and Pool-emulator work adds them)" >&2
	@exit 1

clean:
	$(CARGO) clean
