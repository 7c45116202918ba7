#!/usr/bin/env bash
# Runs ON the H200 (the device machine), from the repository root, with .whl/ and bin/
# carried: the reference-smoke row of TestReferenceSmoke in process mode, then the NVML
# reading, then packs the small evidence parts into $OUT (at most 8 files come back).
#
#   bash scripts/h200/run.sh            (needs $OUT; prints a timing line per step)
#   RUN_RUNTIME=container bash scripts/h200/run.sh   (the row in a GPU container first,
#                                        then in process mode; carry the engine pack too)
#
# Steps: install .whl/diffusers and .whl/aiperf into two targets (the server sees only
# the first, AIPerf only the second, so neither shadows the other's packages); check both
# closures against what is really installed; make a venv-shaped folder for the harness
# (bin/python and bin/aiperf wrappers, the offline tokenizer); run bin/qual.test and
# bin/nvmlread.test (bin/gpuread reads the GPUs for qual.test). Everything is time-boxed to finish within ~8 minutes.
#
# For a dry run elsewhere: RUN_STEPS=install (only the install and the wrappers) or
# RUN_STEPS=pack (only the packing of an evidence run already in $RUN_TMP/qualkit-evidence,
# row RUN_ROW), with PYTHON=... and RUN_TMP=... pointing at a throwaway interpreter and folder.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
: "${OUT:?run.sh writes its results under \$OUT}"
py=${PYTHON:-$(command -v python3)}
tmp=${RUN_TMP:-/tmp}
steps=${RUN_STEPS:-all}
row=${RUN_ROW:-reference-smoke}
# RUN_TESTS: the qual tests to run (a -test.run pattern); TestReferenceSmokePool adds its
# two rows through the GPU pool after the single row, in the same run.
tests=${RUN_TESTS:-^TestReferenceSmoke\$}  # RUN_TIMEOUT (default 440 s) bounds the test binary
site_d=$tmp/site-diffusers
site_a=$tmp/site-aiperf
venv=$tmp/venv
evidence=$tmp/qualkit-evidence
log=$OUT/run.log
mkdir -p "$OUT"
exec > >(tee -a "$log") 2>&1
t0=$(date +%s)
step() { echo "[run.sh +$(( $(date +%s) - t0 ))s] $*"; }
fail=0

pack() {
  local run
  run=$(ls -d "$evidence"/2* 2>/dev/null | tail -n1)
  if [[ -z "$run" ]]; then
    echo "run.sh: no evidence folder under $evidence" >&2
    return 1
  fi
  # At most 8 files come back: run.log, h200.json, results.json, run.tgz (the whole
  # evidence run, for docs/evidence and the checker) and logs.tgz (outside the run
  # folder: SHA256SUMS does not cover them).
  cp "$run/$row/results.json" "$OUT/results.json" 2>/dev/null
  tar czf "$OUT/run.tgz" -C "$(dirname "$run")" "$(basename "$run")"
  tar czf "$OUT/logs.tgz" --ignore-failed-read -C "$tmp" qual.log closure-diffusers.txt closure-aiperf.txt closure-perfserve.txt 2>/dev/null
  tar tzf "$OUT/run.tgz" | wc -l | sed 's/^/  run.tgz entries: /'
  ls -la "$OUT"
}
[[ $steps == pack ]] && { pack; exit $?; }

step "host: $(uname -m) $(nproc) cores; python $("$py" -c 'import sys; print(sys.version.split()[0])') at $py"
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/  /'
"$py" -m pip list --disable-pip-version-check 2>/dev/null | grep -iE '^(torch|torchvision|transformers|tokenizers|huggingface.hub|numpy|pillow|aiohttp|aiofiles|psutil|rich|typing.extensions|pytest|jinja2|zipp|httpx|regex|requests|filelock|safetensors|accelerate) ' | sed 's/^/  /'

step "install wheels"
rm -rf "$site_d" "$site_a"
# perfserve (TRTMC's perf-serve's imports) goes into the server's target, beside diffusers.
for g in diffusers aiperf perfserve; do
  target=$site_d
  [[ $g == aiperf ]] && target=$site_a
  [[ -d .whl/$g ]] || { [[ $g == perfserve ]] && continue; echo "run.sh: .whl/$g missing: scripts/h200/wheels.sh" >&2; exit 1; }
  if ! "$py" -m pip install -q --disable-pip-version-check --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$target" .whl/$g/*.whl; then
    echo "run.sh: installing .whl/$g failed" >&2
    exit 1
  fi
  "$py" scripts/h200/closure.py check-installed ".whl/$g" "$target" > "$tmp/closure-$g.txt" 2>&1 || fail=1
  grep -E '^  (MISSING|WARN)' "$tmp/closure-$g.txt"
  tail -n1 "$tmp/closure-$g.txt"
done

step "venv-shaped folder $venv"
rm -rf "$venv"
mkdir -p "$venv/bin"
cat > "$venv/bin/python" <<EOF
#!/bin/sh
# the H200's python with the diffusers target first on the path
PYTHONPATH=$site_d\${PYTHONPATH:+:\$PYTHONPATH} exec $py "\$@"
EOF
# AIPerf's interpreter sees the host's packages without torch (and its CUDA wheels):
# AIPerf needs none of them, but the host's transformers imports torch for a tokenizer
# when it is there (8.8 s of `from transformers import AutoTokenizer` on the H200,
# measured with python -X importtime), which AIPerf then spends before its first
# request. -S leaves the host's site-packages out; a folder of links to each of their
# entries but torch's stands in for them.
notorch=$tmp/site-host-notorch
rm -rf "$notorch"; mkdir -p "$notorch"
for d in $("$py" -c 'import site; print(" ".join(site.getsitepackages()))'); do
  [[ -d $d ]] || continue
  for e in "$d"/*; do
    n=$(basename "$e")
    [[ ${n,,} =~ ^(torch|functorch|torchgen|torchvision|torchaudio|triton|nvidia) ]] && continue
    [[ -e $notorch/$n ]] || ln -s "$e" "$notorch/$n"
  done
done
cat > "$venv/bin/aiperf" <<EOF
#!/bin/sh
# AIPerf 0.13.0 from its own target, then the host's packages without torch; the
# diffusers target is not on its path
PYTHONPATH=$site_a:$notorch exec $py -S -m aiperf "\$@"
EOF
chmod +x "$venv/bin/python" "$venv/bin/aiperf"
"$venv/bin/python" scripts/make_tokenizer.py "$venv/qualkit-hf" || exit 1
"$venv/bin/python" -c 'import diffusers, torch; print("  diffusers", diffusers.__version__, "from", diffusers.__file__, "| torch", torch.__version__, "cuda", torch.cuda.is_available())' || fail=1
timeout 120 "$venv/bin/aiperf" --version | tail -n1 | sed 's/^/  aiperf /' || fail=1
PYTHONPATH=$site_a:$notorch HF_HOME=$venv/qualkit-hf "$py" -S -c 'import sys, time; t = time.time(); from transformers import AutoTokenizer; print("  AIPerf interpreter: transformers imported in %.1f s, torch imported: %s" % (time.time() - t, "torch" in sys.modules))' || fail=1
[[ $steps == install ]] && { step "done (RUN_STEPS=install)"; exit $fail; }

for b in qual.test nvmlread.test gpuread; do
  if [[ ! -x bin/$b && -f bin/$b.gz ]]; then gunzip -c "bin/$b.gz" > "bin/$b" && chmod +x "bin/$b"; fi
  if [[ ! -x bin/$b && -f bin/$b.xz ]]; then "$py" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "bin/$b.xz" "bin/$b" && chmod +x "bin/$b"; fi
  [[ -x bin/$b ]] || { echo "run.sh: bin/$b missing: build it on the development machine (scripts/h200/README.md)" >&2; exit 1; }
done
export QUALKIT_GPUREAD=$root/bin/gpuread

step "NVML reading (bin/nvmlread.test TestDiscoverOnGPU)"
(cd internal/gpu/nvmlread && QUALKIT_EXPECT_GPU=1 QUALKIT_GPU_READING_OUT="$OUT/h200.json" timeout 60 ../../../../bin/nvmlread.test -test.run '^TestDiscoverOnGPU$' -test.v -test.count=1) | tail -n 5 || fail=1

if [[ ${RUN_RUNTIME:-process} == container ]]; then
  # The same row in a GPU container, before the process run of the same lease: the
  # engine from the carried pack (engine.sh), the base image imported from the device's
  # own Python and torch (no registry here), the backend's image built on it by the
  # harness (families/qwen_image/docker/Dockerfile.diffusers), every stage in it.
  step "start the engine"
  source scripts/h200/engine.sh
  engine_start || exit 1
  base_py=$("$py" -c 'import sys; print(sys.executable)')
  base_prefix=$("$py" -c 'import sys; print(sys.prefix)')
  step "import the base image qualkit/h200-python:local (the device's /usr, /etc and ${base_prefix#/}; python $base_py)"
  paths=(usr/bin usr/sbin usr/lib usr/lib64 bin sbin lib lib64 etc)
  for p in "${base_prefix#/}" "$(dirname "$(readlink -f "$base_py")" | sed 's|^/||')"; do
    covered=0
    for q in "${paths[@]}"; do [[ $p == "$q" || $p == "$q"/* ]] && covered=1; done
    (( covered )) || paths+=("$p")   # a path twice in the tar: the engine refuses it
  done
  echo "  paths: ${paths[*]}"
  tar -C / -cf - --exclude=usr/share --exclude=usr/include --exclude=usr/src --exclude='*/__pycache__' "${paths[@]}" 2>/dev/null \
    | curl -s --unix-socket /var/run/docker.sock -X POST -H 'Content-Type: application/x-tar' -T - \
        'http://x/images/create?fromSrc=-&repo=qualkit/h200-python&tag=local' | tail -c 200; echo
  engine_api /images/qualkit/h200-python:local/json | python3 -c 'import json,sys; i=json.load(sys.stdin); print("  base image", i["Id"][:19], round(i["Size"]/2**30, 2), "GiB")'
  step "TestReferenceSmoke (container mode), evidence in $evidence-container"
  rm -rf "$evidence-container"
  (cd qual && QUALKIT_QWEN_BASE_IMAGE=qualkit/h200-python:local QUALKIT_QWEN_BASE_PYTHON="$base_py" TESTCONTAINERS_RYUK_DISABLED=true \
    timeout "${RUN_TIMEOUT:-440}" ../bin/qual.test -test.run "$tests" -test.v -test.count=1 -test.timeout "$(( ${RUN_TIMEOUT:-440} - 10 ))s" \
    -qualkit.runtime container -qualkit.venv "$venv" -qualkit.evidence "$evidence-container") > "$tmp/qual-container.log" 2>&1
  qual_rc=$?
  grep -E '^(=== RUN|--- (PASS|FAIL|SKIP)|    --- |PASS|FAIL|ok|panic)|row.go|qualkit\.' "$tmp/qual-container.log" | cut -c1-400
  step "qual.test (container) exit $qual_rc"
  (( qual_rc == 0 )) || { fail=1; tail -n 60 "$tmp/qual-container.log"; }
  run=$(ls -d "$evidence-container"/2* 2>/dev/null | tail -n1)
  [[ -n $run ]] && tar czf "$OUT/run-container.tgz" -C "$(dirname "$run")" "$(basename "$run")" && cp "$run/$row/results.json" "$OUT/results-container.json"
  cp "$tmp/qual-container.log" "$OUT/qual-container.log"
  step "stop the engine"
  engine_stop || fail=1
fi

# RUN_PLAN runs several tests back to back in this one lease, each in its own qual.test
# process and evidence folder, each packed as run-N-NAME.tgz: entries TEST or
# TEST:ORDER (ORDER serial adds -qualkit.serial). RUN_ORDERS="serial overlapped" is
# short for "TestReferenceSmoke:serial TestReferenceSmoke:overlapped" (issue 28's pair).
# TestPerfServeReference needs TRTMC's perf-serve: RUN_PERF_SERVE names a copy carried
# with the tree (e.g. .device/trtmc-perf-serve, git-ignored; never committed).
plan=${RUN_PLAN:-}
if [[ -z $plan && -n ${RUN_ORDERS:-} ]]; then
  for order in $RUN_ORDERS; do plan+=" TestReferenceSmoke:$order"; done
fi
if [[ -n $plan ]]; then
  export QUALKIT_QWEN_PYTHON=$venv/bin/python PYTHONUNBUFFERED=1
  [[ -n ${RUN_PERF_SERVE:-} ]] && export QUALKIT_TRTMC_PERF_SERVE=$root/$RUN_PERF_SERVE
  n=0
  for entry in $plan; do
    n=$((n + 1))
    test=${entry%%:*} order=; [[ $entry == *:* ]] && order=${entry#*:}
    flag=; [[ $order == serial ]] && flag=-qualkit.serial
    name=$test${order:+-$order}
    ev=$evidence-$n-$name
    step "$test (process mode${order:+, order $order}), evidence in $ev"
    rm -rf "$ev"
    (cd qual && timeout "${RUN_TIMEOUT:-440}" ../bin/qual.test -test.run "^$test\$" -test.v -test.count=1 -test.timeout "$(( ${RUN_TIMEOUT:-440} - 10 ))s" \
      -qualkit.runtime process -qualkit.venv "$venv" -qualkit.evidence "$ev" $flag) > "$tmp/qual-$n-$name.log" 2>&1
    qual_rc=$?
    grep -E '^(--- (PASS|FAIL|SKIP)|PASS|FAIL|ok|panic)|order:|qualkit\.(status|images)' "$tmp/qual-$n-$name.log" | cut -c1-300
    step "qual.test ($name) exit $qual_rc"
    (( qual_rc == 0 )) || { fail=1; tail -n 40 "$tmp/qual-$n-$name.log"; }
    run=$(ls -d "$ev"/2* 2>/dev/null | tail -n1)
    if [[ -n $run ]]; then
      tar czf "$OUT/run-$n-$name.tgz" -C "$(dirname "$run")" "$(basename "$run")"
      # At most 16 MiB a file comes back: a larger run travels in parts (cat them to unpack).
      if (( $(stat -c %s "$OUT/run-$n-$name.tgz") > 15 * 1024 * 1024 )); then
        split -b 15m -d "$OUT/run-$n-$name.tgz" "$OUT/run-$n-$name.tgz.part" && rm "$OUT/run-$n-$name.tgz"
      fi
      for r in "$run"/*/results.json; do
        python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); t=r.get("time_budget") or {}; print("  %s %s:" % (r.get("row"), r.get("status")), {k: t.get(k) for k in ("wall_s","model_work_s","critical_path_s","physical_limit_s","physical_ratio","ratio","order")}, t.get("overlap"))' "$r"
      done
    fi
  done
  tar czf "$OUT/logs.tgz" --ignore-failed-read -C "$tmp" $(cd "$tmp" && ls qual-*.log) closure-diffusers.txt closure-aiperf.txt closure-perfserve.txt 2>/dev/null
  step "done, exit $fail"
  exit $fail
fi

step "TestReferenceSmoke (process mode), evidence in $evidence"
rm -rf "$evidence"
export QUALKIT_QWEN_PYTHON=$venv/bin/python PYTHONUNBUFFERED=1
(cd qual && timeout "${RUN_TIMEOUT:-440}" ../bin/qual.test -test.run "$tests" -test.v -test.count=1 -test.timeout "$(( ${RUN_TIMEOUT:-440} - 10 ))s" \
  -qualkit.runtime process -qualkit.venv "$venv" -qualkit.evidence "$evidence") > "$tmp/qual.log" 2>&1
qual_rc=$?
grep -E '^(=== RUN|--- (PASS|FAIL|SKIP)|    --- |PASS|FAIL|ok|panic)|row.go|qualkit\.' "$tmp/qual.log" | cut -c1-400
step "qual.test exit $qual_rc"
(( qual_rc == 0 )) || { fail=1; tail -n 60 "$tmp/qual.log"; }

step "pack"
pack || fail=1
step "done, exit $fail"
exit $fail
