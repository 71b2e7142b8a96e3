#!/bin/sh
# Fetches a Debian source package (PACKAGE_*.orig.tar.xz and the Debian files) into WORK
# without touching the system's apt configuration: the deb-src entry, the package lists
# and the cache live under WORK/apt (docs/decisions.md D73). The archive is the one the
# system's own sources name for its release (not backports: the nrt-pool machine is
# written for the release's QEMU 7.2, and the Xtensa gdb is built from its gdb 13).
#
# usage: debian-source.sh PACKAGE WORK
# Prints the path of PACKAGE's .orig.tar.xz in WORK, fetching it only when WORK has none;
# apt's words go to WORK/apt-source.log, shown when the fetch fails.
set -eu
package="${1:?usage: debian-source.sh PACKAGE WORK}"
work="${2:?usage: debian-source.sh PACKAGE WORK}"
mkdir -p "$work"
work=$(cd "$work" && pwd)
have=$(ls "$work/${package}"_*.orig.tar.xz 2>/dev/null | head -n1 || true)
if [ -n "$have" ]; then
    echo "$have"
    exit 0
fi
log="$work/apt-source.log"
fail() {
    cat "$log" >&2 2>/dev/null || true
    echo "debian-source.sh: cannot fetch Debian's $package source: $*" >&2
    exit 1
}
apt="$work/apt"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/parts"

. /etc/os-release
codename="${VERSION_CODENAME:?/etc/os-release names no release}"
# The first URI the system's sources give for the release itself (deb822 or one-line form).
uri=$(
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk -v rel="$codename" '
            /^[[:space:]]*$/ { if (u != "" && s) { print u; exit } u = ""; s = 0; next }
            /^URIs:/ { u = $2 }
            /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == rel) s = 1 }
            END { if (u != "" && s) print u }' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        awk -v rel="$codename" '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { if ($(i + 1) == rel) print $i; break } }' "$f"
    done
)
uri=$(printf '%s\n' "$uri" | sed -n 1p)
[ -n "$uri" ] || {
    echo "debian-source.sh: the system's apt sources name no archive for $codename" >&2
    exit 1
}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
if [ -f "$keyring" ]; then
    printf 'deb-src [signed-by=%s] %s %s main\n' "$keyring" "$uri" "$codename" >"$apt/sources.list"
else
    printf 'deb-src %s %s main\n' "$uri" "$codename" >"$apt/sources.list"
fi
set -- -o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/parts" \
    -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o "APT::Sandbox::User=root"
apt-get "$@" -qq update >"$log" 2>&1 || fail "apt-get update"
(cd "$work" && apt-get "$@" -qq source --download-only "$package") >>"$log" 2>&1 \
    || fail "apt-get source"
ls "$work/${package}"_*.orig.tar.xz 2>/dev/null | head -n1 | grep . || fail "no .orig.tar.xz came"

