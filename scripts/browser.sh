#!/usr/bin/env bash
# Makes sure a headless Chromium is here for the browser test of index.html
# (internal/prsummary/browser_test.go): Debian's chromium-headless-shell and the DejaVu
# fonts it draws text with. As root with apt it installs them; elsewhere it fails at once
# with the command to run. `make test` runs it, as it runs scripts/engine.sh.
set -euo pipefail
pkgs="chromium-headless-shell fonts-dejavu-core"
have() { command -v chromium-headless-shell >/dev/null 2>&1 && [[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]]; }
if have; then
  echo "browser: $(chromium-headless-shell --version 2>/dev/null | head -n 1)"
  exit 0
fi
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "browser: the index.html browser test needs Debian's $pkgs: run sudo apt-get install -y --no-install-recommends $pkgs (or name another headless Chromium with QUALKIT_CHROMIUM)" >&2
  exit 1
fi
# One install at a time on this machine (a run beside this one may be installing them:
# apt refuses a second at once); apt itself waits for any other user of its lock.
exec 8>/run/lock/qualkit-apt.lock
flock 8
if ! have; then
  echo "browser: installing $pkgs (Debian's packages)"
  export DEBIAN_FRONTEND=noninteractive
  aptget() { apt-get -o DPkg::Lock::Timeout=600 "$@" 8>&-; } # no child keeps the lock
  aptget install -y -qq --no-install-recommends $pkgs >/dev/null 2>&1 || { aptget update -qq && aptget install -y -qq --no-install-recommends $pkgs >/dev/null; }
fi
flock -u 8
echo "browser: $(chromium-headless-shell --version 2>/dev/null | head -n 1)"
