#!/bin/sh
# carry-libs.sh PROGRAM LIBDIR PACKAGES PATCHELF: the shared libraries PROGRAM loads, as a
# manylinux wheel carries them: each one ldd resolves, except the C and C++ runtimes the
# manylinux_2_35 policy lets a wheel take from the system, copied into LIBDIR (once) with
# its run path set to $ORIGIN; the Debian package of each copied library is appended to
# PACKAGES (for its copyright file). The caller sets PROGRAM's own run path.
set -eu
PROGRAM=$1
LIBDIR=$2
PACKAGES=$3
PATCHELF=$4
ldd "$PROGRAM" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | while read -r name path; do
    case $name in
    libc.so.* | libm.so.* | libgcc_s.so.* | libstdc++.so.* | libpthread.so.* | libdl.so.* | \
        librt.so.* | ld-linux* | libresolv.so.* | libutil.so.*) continue ;;
    esac
    if [ ! -f "$LIBDIR/$name" ]; then
        cp -L "$path" "$LIBDIR/$name"
        chmod 644 "$LIBDIR/$name"
        "$PATCHELF" --set-rpath '$ORIGIN' "$LIBDIR/$name"
        real=$(readlink -f "$path")
        { dpkg -S "$real" 2>/dev/null || dpkg -S "${real#/usr}" 2>/dev/null; } | head -n1 | cut -d: -f1 >> "$PACKAGES" || true
    fi
done
