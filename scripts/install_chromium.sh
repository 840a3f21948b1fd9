#!/bin/sh
# Debian's chromium for the browser tests, as `make test` installs it (the `browser` target):
# only when it is missing and we are root with apt-get; only the packages chromium depends on
# (--no-install-recommends: no printer tools, upower or systemd), never an upgrade of an
# installed package (apt-get's plan is read first: one that would upgrade anything is refused,
# naming the packages); quietly (apt's output goes to a log, one line is printed).
#
#   sh scripts/install_chromium.sh [CHROMIUM_PATH] [LOG_FILE]
#
# Elsewhere (not root, no apt-get) it prints why the browser tests will be skipped. Exit 0
# unless apt-get failed while installing.
set -u
CHROMIUM=${1:-/usr/bin/chromium}
LOG=${2:-${TMPDIR:-/tmp}/heuresis-chromium-install.log}
APT_OPTIONS="-y -qq --no-install-recommends --no-upgrade"

if [ -x "$CHROMIUM" ]; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "note: no $CHROMIUM and not root with apt-get: the browser tests will be skipped" \
         "(install Debian's chromium package to run them)"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
: >"$LOG"
if ! apt-get update -qq >>"$LOG" 2>&1; then
    echo "note: apt-get update failed (log: $LOG); installing chromium from the lists on disk"
fi
# the plan: an "Inst NAME [OLD] (NEW ...)" line is an upgrade of an installed package
PLAN=$(apt-get -s install $APT_OPTIONS chromium 2>>"$LOG")
UPGRADES=$(printf '%s\n' "$PLAN" | sed -n 's/^Inst \([^ ]*\) \[.*/\1/p' | tr '\n' ' ')
if [ -n "$UPGRADES" ]; then
    echo "note: installing chromium would upgrade installed packages (${UPGRADES% }); not" \
         "installing it: the browser tests will be skipped (install chromium yourself to run them)"
    exit 0
fi
COUNT=$(printf '%s\n' "$PLAN" | grep -c '^Inst ')
echo "installing Debian's chromium for the browser tests ($COUNT packages, no recommends," \
     "no upgrades; log: $LOG)"
if ! apt-get install $APT_OPTIONS chromium >>"$LOG" 2>&1; then
    echo "error: apt-get could not install chromium; the last lines of $LOG:" >&2
    tail -n 20 "$LOG" >&2
    exit 1
fi
