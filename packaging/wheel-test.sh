#!/bin/sh
# make wheel-test (issue #43, D99): installs WHEEL into a fresh venv in a temporary folder
# and runs tests/wheel/first_run.py there, as a user who has only the wheel would: the
# environment emptied (PATH, HOME, LANG only) and, where user namespaces are allowed, this
# checkout hidden under an empty folder, so nothing can be found in its build tree.
# usage: wheel-test.sh ROOT WHEEL
set -eu
ROOT=$(cd "$1" && pwd)
WHEEL=$2
T=$(mktemp -d /tmp/gpsimd-wheel.XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
case "$T/" in "$ROOT"/*) echo "wheel-test.sh: $T lies in the checkout" >&2; exit 1 ;; esac

python3 -m venv "$T/venv"
"$T/venv/bin/pip" install -q --disable-pip-version-check "$WHEEL"
mkdir "$T/work"
cp "$ROOT/tests/wheel/first_run.py" "$T/work/"

clean() { env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$T" LANG=C.UTF-8 "$@"; }
if unshare -rm true 2>/dev/null; then
    echo "wheel-test: the checkout $ROOT is hidden (user and mount namespace)"
    clean unshare -rm sh -c 'mount -t tmpfs gpsimd-hidden "$1" && cd "$2" && shift 2 && exec "$@"' \
        sh "$ROOT" "$T/work" "$T/venv/bin/python" first_run.py "$T/venv"
else
    echo "wheel-test: user namespaces refused here: the checkout stays visible; first_run.py" \
        "still requires every part to be found inside the venv"
    cd "$T/work" && clean "$T/venv/bin/python" first_run.py "$T/venv"
fi
