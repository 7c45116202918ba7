#!/usr/bin/env bash
# Downloads into .whl/ (git-ignored) the wheels the H200 lacks, for CPython 3.12 on
# manylinux x86_64, in two groups that run.sh installs into two separate targets:
#   .whl/diffusers/  what the diffusers reference backend needs beyond the H200's torch,
#                    transformers, torchvision, numpy, pillow: diffusers itself
#   .whl/aiperf/     aiperf==0.13.0 and the dependencies `aiperf profile` imports that
#                    the H200 lacks (scripts/h200/closure.py lists what is left out, why)
#   .whl/perfserve/  what TRTMC's perf-serve imports to serve (apps/perf_serving/
#                    requirements.txt @ ca938e40: fastapi, uvicorn, python-multipart; and
#                    fastapi's own) that the H200 lacks; run.sh installs it into the
#                    server's target, beside diffusers
# Versions: diffusers from families/qwen_image/reference/pipeline.py (DIFFUSERS_VERSION),
# everything else from scripts/constraints.txt (the project venv's pins). Then it checks
# each group's Requires-Dist closure against scripts/h200/h200-packages.txt and prints
# the size of everything that travels to the device (64 MiB at most).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dest=${WHEELS:-$root/.whl}
py=${PYTHON:-python3}
cd "$root"

pin() { # the version scripts/constraints.txt pins for $1 (names compared normalised)
  local want; want=$(echo "$1" | tr 'A-Z_.' 'a-z--')
  while IFS='=' read -r name _ ver; do
    [[ $(echo "$name" | tr 'A-Z_.' 'a-z--') == "$want" ]] && { echo "$ver"; return; }
  done < scripts/constraints.txt
  echo "wheels.sh: $1 is not pinned in scripts/constraints.txt" >&2; exit 1
}

diffusers_version=$(sed -n 's/^DIFFUSERS_VERSION = "\(.*\)"$/\1/p' families/qwen_image/reference/pipeline.py)
[[ -n "$diffusers_version" ]] || { echo "wheels.sh: no DIFFUSERS_VERSION in pipeline.py" >&2; exit 1; }
DIFFUSERS=("diffusers==$diffusers_version")

# Imported by `aiperf profile` (traced) and absent from the H200.
AIPERF_NAMES=(aiperf annotated-types crick cyclopts docstring_parser ffmpeg-python future msgspec orjson
  pydantic pydantic_core pydantic-settings python-dotenv pyzmq rich-rst ruamel.yaml ruamel.yaml.clib
  setproctitle typing-inspection)
# AIPerf's raw endpoint (the perf-serve rows' Task protocol) imports jmespath.
AIPERF_NAMES+=(jmespath)
# On the H200 too, but pydantic 2.14 needs typing_extensions >= 4.16 and aiperf pins
# rich ~= 14.1; the H200's versions of these two are unknown. Carried into the aiperf
# target only, so they shadow nothing the diffusers backend imports.
AIPERF_NAMES+=(typing_extensions rich)
AIPERF=()
for n in "${AIPERF_NAMES[@]}"; do AIPERF+=("$n==$(pin "$n")"); done
# perf-serve's server side; typing_extensions again: the server's target does not see
# AIPerf's, and pydantic 2.14 needs >= 4.16.
PERFSERVE_NAMES=(fastapi starlette uvicorn pydantic pydantic_core annotated-types typing-inspection python-multipart typing_extensions opentelemetry-api importlib_metadata lazy-importer)
PERFSERVE=()
for n in "${PERFSERVE_NAMES[@]}"; do PERFSERVE+=("$n==$(pin "$n")"); done

download() { # $1 group dir, then requirements
  local dir=$1; shift
  "$py" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --python-version 3.12 --implementation cp --abi cp312 \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 \
    -d "$dir" "$@"
}

rm -rf "$dest/diffusers" "$dest/aiperf" "$dest/perfserve"
mkdir -p "$dest/diffusers" "$dest/aiperf" "$dest/perfserve"
download "$dest/diffusers" "${DIFFUSERS[@]}"
download "$dest/aiperf" "${AIPERF[@]}"
download "$dest/perfserve" "${PERFSERVE[@]}"

status=0
for g in diffusers aiperf perfserve; do
  "$py" scripts/h200/closure.py check-list "$dest/$g" scripts/h200/h200-packages.txt > "$dest/closure-$g.txt" || status=1
  grep -E "^  (MISSING|WARN)" "$dest/closure-$g.txt" || true
  tail -n1 "$dest/closure-$g.txt"
done

mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
bytes() { du -sb "$@" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }
echo "wheels:"
for f in "$dest"/diffusers/*.whl "$dest"/aiperf/*.whl "$dest"/perfserve/*.whl; do printf '  %8s  %s\n' "$(mib "$(stat -c %s "$f")")" "${f#"$root"/}"; done
w=$(bytes "$dest")
tree=$( (git ls-files -z; git ls-files -z --others --exclude-standard) | xargs -0 -r du -cb 2>/dev/null | awk '/\ttotal$/ { s += $1 } END { print s + 0 }')
bins=0
[[ -d bin ]] && bins=$(bytes bin)
total=$((w + tree + bins))
echo "total: wheels $(mib "$w") + working tree $(mib "$tree") + bin/ $(mib "$bins") = $(mib "$total") of the 64 MiB a device call carries"
if (( total > 60 * 1048576 )); then
  echo "wheels.sh: over 60 MiB: build the test binaries with -ldflags='-s -w' (scripts/h200/README.md)" >&2
  status=1
fi
exit $status
