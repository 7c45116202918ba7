#!/usr/bin/env bash
# Runs ON the H200 (the device machine), from the repository root, as root, with the GPU
# container pack and bin/ carried: starts a Docker engine with the NVIDIA runtime in CDI
# mode (the steps of shared/h200-gpu-containers/start-engine.sh, which this script carries
# out itself), then checks the TRTMC row's container settings on the GPU
# (TestTRTMCContainerSettings with QUALKIT_EXPECT_GPU=1: --ipc=host, the HF cache
# read-only, host networking, the checkout at /src, the leased GPU by UUID, all verified
# from inside the container), reads the GPU's memory before and after, and stops the
# engine, leaving nothing running. Results and logs go to $OUT.
#
# The pack (shared/h200-gpu-containers/make-pack.sh, ~44 MB) and the tracked tree do not
# fit one call's 64 MiB together: split pack.tar.xz into .gpupack-a/ and .gpupack-b/
# (scripts/h200/container.sh split), carry the first in one call and the second, lib/ and
# bin/ in the next while the machine is warm; this script joins them.
#
#   here:   bash scripts/h200/container.sh split       (from .gpupack/)
#   device: bash scripts/h200/container.sh             (needs $OUT)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
if [[ ${1:-} == split ]]; then
  rm -rf .gpupack-a .gpupack-b && mkdir -p .gpupack-a .gpupack-b
  split -b 21M -d .gpupack/pack.tar.xz .gpupack-a/pack.tar.xz.part-
  mv .gpupack-a/pack.tar.xz.part-0[1-9] .gpupack-b/ 2>/dev/null
  cp -r .gpupack/lib .gpupack-b/lib
  du -sh .gpupack-a .gpupack-b
  exit 0
fi
: "${OUT:?container.sh writes its results under \$OUT}"
mkdir -p "$OUT"
exec > >(tee -a "$OUT/container.log") 2>&1
t0=$(date +%s)
step() { echo "[container.sh +$(( $(date +%s) - t0 ))s] $*"; }
fail=0

step "unpack the binaries and start the engine"
for f in bin/*.gz; do [[ -e ${f%.gz} ]] || gunzip -k "$f"; done
chmod +x bin/* 2>/dev/null
source scripts/h200/engine.sh
engine_start || exit 1
cp /tmp/dockerd.log "$OUT/dockerd-start.log" 2>/dev/null

step "GPU memory before"
nvidia-smi --query-gpu=uuid,memory.used,memory.total --format=csv,noheader | tee "$OUT/gpu-before.csv"

step "TestTRTMCContainerSettings on the GPU"
(cd families/qwen_image && QUALKIT_EXPECT_GPU=1 QUALKIT_GPUREAD="$root/bin/gpuread" QUALKIT_CONTAINERPROBE="$root/bin/containerprobe" \
  TESTCONTAINERS_RYUK_DISABLED=true timeout 300 ../../bin/qwen_image.test -test.run '^TestTRTMCContainerSettings$' -test.v -test.count=1) \
  > "$OUT/settings.log" 2>&1 || fail=1
grep -E '^(=== RUN|--- |PASS|FAIL|ok)|seen from inside|docker run as|Error' "$OUT/settings.log" | cut -c1-2000

step "GPU memory after"
nvidia-smi --query-gpu=uuid,memory.used,memory.total --format=csv,noheader | tee "$OUT/gpu-after.csv"
step "stop the engine"
engine_stop || fail=1
step "done (fail=$fail)"
exit $fail
