"""The ``nrt-pool`` console script: runs the CLI program the package carries (a wheel's
``gpsimd_open/data/bin/nrt-pool``), or the build tree's for a package installed from a
checkout, with the same arguments; its exit status is the script's."""
import os
import sys

from . import _native


def program():
    """Where the ``nrt-pool`` program is, or None."""
    path = _native.installed("nrt-pool")
    return path if os.access(path, os.X_OK) else None


def main():
    path = program()
    if path is None:
        sys.stderr.write(
            "nrt-pool: the program is not in this installation of gpsimd_open (looked for "
            f"{_native.installed('nrt-pool')}); install the wheel (make wheel), or build it in "
            "the checkout: cargo build --release -p nrt-pool-cli\n")
        return 2
    os.execv(path, [path] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
