#!/bin/sh
# Stages the Xtensa GCC and binutils a device build runs (D114) into DEST, relocatable, as
# the wheel carries them: Debian's gcc-xtensa-lx106 and binutils-xtensa-lx106 (installed
# here by make tools), only what the build flow and an op author's `g++ -c` use, with the
# libraries they load beside them ($ORIGIN run paths) and their licences in DEST/doc.
#   DEST/bin/xtensa-lx106-elf-{g++,gcc,cpp,as,ld,...}
#   DEST/lib/gcc/xtensa-lx106-elf/VERSION/{cc1plus,cc1,collect2,include,...}
#   DEST/lib/xtensa-lx106-elf/bin/{as,ld}       (where the driver looks for them)
#   DEST/lib/*.so.*                              (GMP, MPFR, MPC, ISL, zlib, zstd)
# glibc 2.36's arc4random, which the compilers name, is given by a small library of ours
# (libgpsimd-compat.so) so they need no glibc newer than 2.35 (the wheel's manylinux tag).
# usage: xtensa-tools.sh DEST PATCHELF
set -eu
DEST=$1
PATCHELF=$2
T=xtensa-lx106-elf
GCCLIB=$(dirname "$("$T-gcc" -print-libgcc-file-name)")
VERSION=$(basename "$GCCLIB")
TOOLDIR=$(dirname "$("$T-gcc" -print-prog-name=as)")
rm -rf "$DEST.partial"
mkdir -p "$DEST.partial/bin" "$DEST.partial/lib/gcc/$T/$VERSION" "$DEST.partial/lib/$T/bin" "$DEST.partial/doc"
D=$DEST.partial

for p in g++ gcc cpp as ld ar nm ranlib objdump objcopy readelf size strip addr2line c++filt; do
    cp -L "$(command -v "$T-$p")" "$D/bin/$T-$p"
done
for p in cc1plus cc1 collect2 libgcc.a crtbegin.o crtend.o crti.o crtn.o; do
    cp -L "$GCCLIB/$p" "$D/lib/gcc/$T/$VERSION/$p"
done
cp -RL "$GCCLIB/include" "$GCCLIB/include-fixed" "$D/lib/gcc/$T/$VERSION/"
for p in as ld; do
    cp -L "$TOOLDIR/$p" "$D/lib/$T/bin/$p"
done

# arc4random for glibc before 2.36: from the kernel's getrandom, as glibc's own does.
cat > "$D/compat.c" <<'EOF'
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
uint32_t arc4random(void) {
    uint32_t v = 0;
    while (syscall(SYS_getrandom, &v, sizeof v, 0) != (long)sizeof v) {
    }
    return v;
}
EOF
gcc -O2 -shared -fPIC -Wl,-soname,libgpsimd-compat.so "$D/compat.c" -o "$D/lib/libgpsimd-compat.so"
rm "$D/compat.c"

# Each program's libraries beside it in lib/, found by a run path relative to the program.
: > "$D/doc/.packages"
find "$D/bin" "$D/lib" -type f | while read -r f; do
    file -b "$f" | grep -q '^ELF.*dynamically linked' || continue
    "$(dirname "$0")/carry-libs.sh" "$f" "$D/lib" "$D/doc/.packages" "$PATCHELF"
    case $f in
    "$D"/lib/*.so*) ;;
    *)
        # The run path from the program's folder up to DEST, then lib/.
        up=$(dirname "${f#"$D"/}" | sed 's|[^/][^/]*|..|g')
        "$PATCHELF" --set-rpath "\$ORIGIN/$up/lib" "$f"
        if objdump -T "$f" | grep -q 'GLIBC_2.36.*arc4random'; then
            "$PATCHELF" --clear-symbol-version arc4random --add-needed libgpsimd-compat.so "$f"
            python3 "$(dirname "$0")/retire_glibc_version.py" "$f" GLIBC_2.36
        fi
        ;;
    esac
done

for pkg in gcc-xtensa-lx106 binutils-xtensa-lx106 $(sort -u "$D/doc/.packages"); do
    f="/usr/share/doc/${pkg%:*}/copyright"
    [ -f "$f" ] && cp "$f" "$D/doc/${pkg%:*}.copyright"
done
rm -f "$D/doc/.packages"
gcc_version=$(dpkg-query -W -f '${Version}' gcc-xtensa-lx106)
binutils_version=$(dpkg-query -W -f '${Version}' binutils-xtensa-lx106)
cat > "$D/doc/SOURCE.md" <<EOF
# The Xtensa tools carried here

GCC $VERSION for $T (GPL-3.0-or-later, with the GCC Runtime Library Exception for
libgcc.a and the crt objects) from Debian's binary package gcc-xtensa-lx106 $gcc_version,
and GNU binutils (GPL-3.0-or-later) from binutils-xtensa-lx106 $binutils_version; the
libraries in lib/ from the Debian packages whose copyright files are here. Their source:
\`apt-get source gcc-xtensa-lx106 binutils-xtensa-lx106\` on Debian 12, or
https://snapshot.debian.org/package/gcc-xtensa-lx106/ and
https://snapshot.debian.org/package/binutils-xtensa-lx106/ at the versions above.
Changed here only by their run paths (patchelf) and, in cc1 and cc1plus, arc4random's
symbol version and glibc 2.36 requirement (arc4random is given by lib/libgpsimd-compat.so,
gpsimd-open's, from the kernel's getrandom).
EOF
rm -rf "$DEST"
mv "$D" "$DEST"
