#!/bin/sh
# make wheel-test (issue #43, D99): installs WHEEL into a fresh venv in a temporary folder
# and runs tests/wheel/first_run.py there, as a user who has only the wheel and g++ would:
# the environment emptied (PATH, HOME, LANG only) and, where user namespaces are allowed,
# this checkout and the system's Xtensa tools, 32-bit C libraries and plugin headers hidden
# under empty folders, so nothing can be found in the build tree or Debian's packages.
# First tests/wheel/index_rules.py: the wheel meets the index's rules (its tag, every
# ELF's glibc floor, its size).
# usage: wheel-test.sh ROOT WHEEL
set -eu
ROOT=$(cd "$1" && pwd)
WHEEL=$2
T=$(mktemp -d /tmp/gpsimd-wheel.XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
case "$T/" in "$ROOT"/*) echo "wheel-test.sh: $T lies in the checkout" >&2; exit 1 ;; esac

python3 "$ROOT/tests/wheel/index_rules.py" "$WHEEL"
python3 -m venv "$T/venv"
"$T/venv/bin/pip" install -q --disable-pip-version-check "$WHEEL"
mkdir "$T/work"
cp "$ROOT/tests/wheel/first_run.py" "$T/work/"

clean() { env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$T" LANG=C.UTF-8 "$@"; }
# What an op author's machine does not have, hidden in the namespace: the checkout, the
# system's Xtensa tools (Debian's gcc-xtensa-lx106, binutils-xtensa-lx106), its 32-bit C
# libraries and libgcc (g++-multilib) and GCC's plugin headers (gcc-12-plugin-dev).
HIDE='mount -t tmpfs gpsimd-hidden "$1"
for d in /usr/lib32 /usr/libx32 /usr/lib/gcc/x86_64-linux-gnu/*/32 /usr/lib/gcc/x86_64-linux-gnu/*/x32 \
    /usr/lib/gcc/x86_64-linux-gnu/*/plugin /usr/lib/gcc/xtensa-lx106-elf /usr/lib/xtensa-lx106-elf; do
    if [ -d "$d" ]; then mount -t tmpfs gpsimd-hidden "$d"; fi
done
for f in /usr/bin/xtensa-lx106-elf-*; do
    if [ -e "$f" ]; then mount --bind /dev/null "$f"; fi
done
cd "$2" && shift 2 && exec "$@"'
if unshare -rm true 2>/dev/null; then
    echo "wheel-test: the checkout $ROOT, the system's Xtensa tools, 32-bit C libraries and GCC plugin headers are hidden (user and mount namespace)"
    clean GPSIMD_WHEEL_TEST_HIDDEN=1 unshare -rm sh -c "$HIDE" \
        sh "$ROOT" "$T/work" "$T/venv/bin/python" first_run.py "$T/venv"
else
    echo "wheel-test: user namespaces refused here: the checkout and the system's tools stay" \
        "visible; first_run.py still requires every part to be found inside the venv"
    cd "$T/work" && clean "$T/venv/bin/python" first_run.py "$T/venv"
fi
