#!/usr/bin/env bash
# Makes the Python image the TRTMC contract double's checkouts build on, once per machine
# and Docker engine (like the venv): real Python, pytest at TRTMC's pin, CMake and Ninja
# from PyPI, and perf-serve's dependencies, where the double's image used to be one Go
# binary playing all of them. `make test` and `make qwen-double` run it; the qual tests
# refuse to start the double without it, naming this script.
#
#   1. Debian bookworm with python3, made here with mmdebstrap and `docker import` (no
#      registry is reachable): qualkit/debian-python:<sha256 of this script>.
#   2. The wheels of families/qwen_image/trtmcdouble/image/requirements.lock, every one pinned by its
#      sha256, downloaded once into ~/.cache/qualkit/double-wheels-<key>.
#   3. Both together, built offline (--network none): qualkit/trtmc-double-python:<key>.
# <key> is the sha256 of this script, the image's Dockerfile and the lock (the Go side,
# trtmcdouble.PythonImage, computes the same), so a change to any of them makes a new
# image and an unchanged one is never rebuilt. Nothing here is removed by a run: the
# images carry no run label.
#
# Needs a Docker engine (scripts/engine.sh), pip, and mmdebstrap (installed here from
# Debian's packages when this machine is Debian and this is root); DEBIAN_MIRROR
# overrides the Debian mirror.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=families/qwen_image/trtmcdouble/image
key=$(cat scripts/double-image.sh "$dir/Dockerfile" "$dir/requirements.lock" | sha256sum | cut -c1-16)
base=qualkit/debian-python:$(sha256sum scripts/double-image.sh | cut -c1-16) # the Debian part: this script alone
image=qualkit/trtmc-double-python:$key
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
started=$(date +%s)
say() { echo "double-image: +$(($(date +%s) - started)) s: $*"; }

if docker image inspect "$image" >/dev/null 2>&1; then
  echo "double-image: $image is present"
  exit 0
fi

cache=${XDG_CACHE_HOME:-$HOME/.cache}/qualkit
mkdir -p "$cache"
# One maker at a time on this machine: a run beside this one (two fresh clones started
# together) may be making the same image, and once it has there is nothing to do.
exec 7>"$cache/double-image.lock"
flock 7
if docker image inspect "$image" >/dev/null 2>&1; then
  echo "double-image: $image is present (made beside this run)"
  exit 0
fi
wheels=$cache/double-wheels-$key
if [[ ! -f $wheels/complete ]]; then
  say "downloading the pinned wheels into $wheels (once)"
  tmp=$(mktemp -d "$cache/double-wheels-tmp.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  python3 -m pip download -q --disable-pip-version-check --no-deps --require-hashes --only-binary=:all: \
    --python-version 3.11 --implementation cp --abi cp311 \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux_2_12_x86_64 --platform manylinux2010_x86_64 \
    --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 \
    -r "$dir/requirements.lock" -d "$tmp"
  touch "$tmp/complete"
  rm -rf "$wheels"
  mv "$tmp" "$wheels"
  trap - EXIT
fi

if ! docker image inspect "$base" >/dev/null 2>&1; then
  if ! command -v mmdebstrap >/dev/null 2>&1; then
    if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
      echo "double-image: mmdebstrap is not installed: run sudo apt-get install -y mmdebstrap (Debian), then rerun" >&2
      exit 1
    fi
    # One install at a time on this machine, as scripts/browser.sh.
    exec 8>/run/lock/qualkit-apt.lock
    flock 8
    if ! command -v mmdebstrap >/dev/null 2>&1; then
      say "installing mmdebstrap (Debian's package)"
      export DEBIAN_FRONTEND=noninteractive
      aptget() { apt-get -o DPkg::Lock::Timeout=600 "$@" 8>&-; } # no child keeps the lock
      # With no package lists yet (a fresh machine whose engine was not installed here).
      aptget install -y -qq mmdebstrap >/dev/null 2>&1 || { aptget update -qq && aptget install -y -qq mmdebstrap >/dev/null; }
    fi
    flock -u 8
  fi
  say "making Debian bookworm with python3 ($mirror) and importing it as $base"
  mmdebstrap --quiet --variant=essential --include=python3,libstdc++6 \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' bookworm - "$mirror" |
    docker import --message "qualkit: Debian bookworm with python3 (scripts/double-image.sh)" - "$base" >/dev/null
fi

say "building $image offline from $base and the wheels"
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cp "$wheels"/*.whl "$dir/requirements.lock" "$ctx/"
docker build -q --network none --build-arg "BASE=$base" -t "$image" -f "$dir/Dockerfile" "$ctx" >/dev/null
say "$image is ready ($(docker image inspect --format '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'))"
