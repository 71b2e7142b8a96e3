#!/bin/sh
# Installs the Debian packages among PKG... that are not installed yet, and never lets apt
# remove or downgrade a package to do it (docs/decisions.md D73).
#
# usage: apt-install.sh PKG...
#
# Nothing missing: nothing runs (no apt, no network). Otherwise apt's transaction is first
# simulated (`apt-get install -s`); a transaction that would remove or downgrade a package
# stops here, naming the packages and the ways out, and changes nothing. Set
# NRT_POOL_APT_ALLOW_CHANGES=1 to let apt go ahead anyway.
#
# NRT_POOL_APT_GET and NRT_POOL_DPKG_QUERY name other commands (the tests use fakes).
set -eu
apt_get="${NRT_POOL_APT_GET:-apt-get}"
dpkg_query="${NRT_POOL_DPKG_QUERY:-dpkg-query}"
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"

missing=""
for p in "$@"; do
    if ! "$dpkg_query" -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
        missing="$missing $p"
    fi
done
[ -n "$missing" ] || exit 0

echo "apt-install.sh: installing$missing" >&2
# shellcheck disable=SC2086 # the package names are words
$sudo "$apt_get" update -qq >&2
# shellcheck disable=SC2086
sim=$(DEBIAN_FRONTEND=noninteractive "$apt_get" install -s --no-install-recommends $missing) || {
    echo "$sim" >&2
    echo "apt-install.sh: apt cannot install$missing (above)" >&2
    exit 1
}

# Removals: "Remv NAME [VERSION]". Downgrades: "Inst NAME [OLD] (NEW ...)" with NEW < OLD.
removed=$(printf '%s\n' "$sim" | awk '$1 == "Remv" { print $2 }')
downgraded=""
for line in $(printf '%s\n' "$sim" | awk '$1 == "Inst" && $3 ~ /^\[/ { gsub(/[][()]/, "", $3); gsub(/[()]/, "", $4); print $2 "=" $3 "=" $4 }'); do
    name=${line%%=*}
    rest=${line#*=}
    old=${rest%%=*}
    new=${rest#*=}
    if dpkg --compare-versions "$new" lt "$old" 2>/dev/null; then
        downgraded="$downgraded $name ($old -> $new)"
    fi
done

if { [ -n "$removed" ] || [ -n "$downgraded" ]; } && [ "${NRT_POOL_APT_ALLOW_CHANGES:-0}" != 1 ]; then
    {
        echo "apt-install.sh: installing$missing would make apt change packages you have:"
        [ -z "$removed" ] || echo "  remove:$(printf ' %s' $removed)"
        [ -z "$downgraded" ] || echo "  downgrade:$downgraded"
        echo "Nothing was changed. Choices:"
        echo "  - install$missing yourself in a way that keeps those packages, then run make again;"
        echo "  - or let apt make the change: NRT_POOL_APT_ALLOW_CHANGES=1 make tools"
    } >&2
    exit 3
fi

# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $sudo "$apt_get" install -y -qq --no-install-recommends $missing >&2
