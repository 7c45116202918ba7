"""The refedit family correctness case: one pytest item, like TRTMC's e2e case.

For every case in cases.CASES it runs `refedit run BUNDLE ...` (the native Task), compares
the PNG with the independent float64 reference (reference.py), and gates the metrics with
thresholds.json. Everything it saw goes to ARTIFACTS/result.json ("status": "pass"|"fail"),
written before the assertion so a failing run still leaves its evidence.
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import PIL
from PIL import Image

import cases
import metrics
import reference

RUN_TIMEOUT_S = 60
RUN_REPORT_KEYS = ("backend", "bundle_sha256", "image", "input_sha256", "output", "output_sha256", "settings", "timing")
USAGE_EXIT = 2  # README "CLI": a prompt matching no or several edits is a command line to fix


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _last_json_line(text: str):
    for line in reversed(text.strip().splitlines()):
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            continue
    return None


def _reported_settings_problems(case: cases.Case, report) -> list[str]:
    """The effective settings the binary printed must be the ones requested."""
    if not isinstance(report, dict):
        return ["stdout has no JSON line"]
    got = report.get("settings", report)
    if not isinstance(got, dict):
        return ["stdout JSON has no settings object"]
    w, h = case.size
    want = {
        "edit": case.edit,
        "width": w,
        "height": h,
        "num_inference_steps": case.num_inference_steps,
        "seed": case.seed,
        "precision": "fp32",
    }
    problems = []
    for key, value in want.items():
        if got.get(key) != value:
            problems.append(f"settings.{key}={got.get(key)!r}, want {value!r}")
    g = got.get("guidance_scale")
    if not isinstance(g, (int, float)) or not math.isclose(g, case.guidance_scale, rel_tol=1e-6):
        problems.append(f"settings.guidance_scale={g!r}, want {case.guidance_scale}")
    return problems


def _run(binary: Path, bundle: Path, image: Path, output: Path, argv: list[str]) -> dict:
    cmd = [str(binary), "run", str(bundle), "--image", str(image), *argv, "--output", str(output)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    return {
        "argv": cmd,
        "rc": proc.returncode,
        "wall_ms": round((time.perf_counter() - start) * 1000, 3),
        "stdout": proc.stdout[-4000:],
        "stderr": proc.stderr[-4000:],
    }


def _run_case(
    case, binary, bundle, bundle_sha256, inputs, out_dir, ref_dir, thresholds
) -> tuple[dict, np.ndarray | None]:
    record = {
        "id": case.id,
        "image": inputs[case.image].name,
        "input_sha256": _sha256(inputs[case.image]),
        "prompt": case.prompt,
        "edit": case.edit,
        "settings": {**case.settings(), "size": f"{case.size[0]}x{case.size[1]}"},
        "problems": [],
    }
    problems = record["problems"]
    matched = reference.match_edits(case.prompt)
    if matched != [case.edit]:
        problems.append(f"prompt {case.prompt!r} selects {matched} in the README table, want [{case.edit!r}]")
        return record, None

    out_png = out_dir / f"{case.id}.png"
    out_png.unlink(missing_ok=True)
    run = _run(binary, bundle, inputs[case.image], out_png, case.argv())
    record["run"] = run
    if run["rc"] != 0:
        problems.append(f"refedit run exited {run['rc']}: {run['stderr'].strip()[-500:]}")
        return record, None
    report = _last_json_line(run["stdout"])
    record["reported"] = report
    problems.extend(_reported_settings_problems(case, report))
    if not out_png.is_file():
        problems.append(f"no output file {out_png}")
        return record, None
    record["output"] = str(out_png)
    record["output_sha256"] = _sha256(out_png)
    # README "CLI": the line names the backend and the true hashes of bundle, input and output.
    if isinstance(report, dict):
        if missing := [k for k in RUN_REPORT_KEYS if k not in report]:
            problems.append(f"stdout JSON lacks {missing}")
        if report.get("backend") != "refedit":
            problems.append(f"backend {report.get('backend')!r}, want 'refedit'")
        for key, want in (("output_sha256", record["output_sha256"]), ("input_sha256", record["input_sha256"]),
                          ("bundle_sha256", bundle_sha256)):
            if key in report and report[key] != want:
                problems.append(f"reported {key} {report[key]!r}, file has {want}")
        task_ms = (report.get("timing") or {}).get("task_ms")
        if not isinstance(task_ms, (int, float)) or task_ms < 0:
            problems.append(f"timing.task_ms {task_ms!r}, want a number >= 0")

    with Image.open(out_png) as im:
        record["output_format"] = {"format": im.format, "mode": im.mode, "size": list(im.size)}
        if im.format != "PNG" or im.mode != "RGB":
            problems.append(f"output is {im.format} {im.mode}, want an 8-bit RGB PNG")
        if im.size != case.size:
            problems.append(f"output size {im.size}, want {case.size}")
            return record, None
        actual = np.asarray(im.convert("RGB"), dtype=np.uint8)

    ref = reference.edit_file(
        inputs[case.image],
        case.prompt,
        size=case.size,
        num_inference_steps=case.num_inference_steps,
        guidance_scale=case.guidance_scale,
        seed=case.seed,
    )
    ref_png = ref_dir / f"{case.id}.png"
    Image.fromarray(ref.output).save(ref_png)
    record["reference_output"] = str(ref_png)

    m = metrics.compare(actual, ref.output, ref.excused, ref.near_tie, reference.quantize(ref.base))
    record["metrics"] = m
    record["violations"] = metrics.violations(thresholds, case.edit, m)
    diff = np.abs(actual.astype(int) - ref.output.astype(int))
    wrong = (diff > 0) & ~ref.near_tie & ~ref.excused
    for name, mask in (("first_wrong_value", wrong), ("first_diff_gt1", diff > 1)):
        if mask.any():
            y, x, c = (int(v) for v in np.argwhere(mask)[0])
            record[name] = {
                "y": y, "x": x, "channel": c,
                "refedit": int(actual[y, x, c]), "reference": int(ref.output[y, x, c]),
                "tie_distance_levels": float(ref.tie_distance[y, x, c]), "excused": bool(ref.excused[y, x, c]),
            }
    return record, actual


def _check_rejections(binary, bundle, image, out_dir) -> list[dict]:
    checks = []
    for name, prompt, _, named in cases.REJECTED_PROMPTS:
        out_png = out_dir / f"rejected-{name}.png"
        out_png.unlink(missing_ok=True)
        run = _run(binary, bundle, image, out_png, ["--prompt", prompt])
        message = (run["stderr"] + run["stdout"]).lower()
        problems = []
        if run["rc"] != USAGE_EXIT:
            problems.append(f"exit {run['rc']}, want {USAGE_EXIT} (a refused instruction)")
        if out_png.exists():
            problems.append(f"wrote {out_png.name} for a refused instruction")
        for edit in named:
            if edit not in message:
                problems.append(f"message does not name {edit!r}")
        checks.append({
            "name": f"rejects-{name}",
            "prompt": prompt,
            "ok": not problems,
            "detail": "; ".join(problems) or f"refused (exit {run['rc']})",
            "run": run,
        })
    return checks


def test_refedit_e2e(refedit_binary: Path, bundle: Path, artifacts_dir: Path, thresholds_path: Path):
    started = time.perf_counter()
    thresholds = metrics.load_thresholds(thresholds_path)
    bundle_sha_before = _sha256(bundle)
    version = subprocess.run([str(refedit_binary), "version"], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)

    inputs = cases.write_inputs(artifacts_dir / "inputs")
    out_dir = artifacts_dir / "outputs"
    ref_dir = artifacts_dir / "reference"
    out_dir.mkdir(parents=True, exist_ok=True)
    ref_dir.mkdir(parents=True, exist_ok=True)

    records, outputs = [], {}
    for case in cases.CASES:
        try:
            record, actual = _run_case(
                case, refedit_binary, bundle, bundle_sha_before, inputs, out_dir, ref_dir, thresholds
            )
        except Exception as e:  # one broken case (a hang, a corrupt PNG) must not lose the others' evidence
            record = {"id": case.id, "edit": case.edit, "problems": [f"{type(e).__name__}: {e}"]}
            actual = None
        records.append(record)
        if actual is not None:
            outputs[case.id] = actual

    checks = []
    a, b = cases.GRAIN_SEED_PAIR
    if a in outputs and b in outputs:
        frac = float(np.mean(outputs[a] != outputs[b]))
        checks.append({
            "name": "grain-seeds-differ", "ok": frac > 0.5,
            "detail": f"{a} vs {b}: {frac:.4f} of values differ (want > 0.5)",
        })
    else:
        checks.append({"name": "grain-seeds-differ", "ok": False, "detail": f"{a} or {b} has no output"})
    checks.extend(_check_rejections(refedit_binary, bundle, inputs["shapes_96x64"], out_dir))
    bundle_sha_after = _sha256(bundle)
    checks.append({
        "name": "bundle-unchanged", "ok": bundle_sha_after == bundle_sha_before,
        "detail": f"sha256 before {bundle_sha_before}, after {bundle_sha_after}",
    })

    failures = []
    for r in records:
        failures += [f"case {r['id']} ({r['edit']}): {p}" for p in r["problems"]]
        failures += [f"case {r['id']} ({r['edit']}): {v}" for v in r.get("violations", [])]
    failures += [f"check {c['name']}: {c['detail']}" for c in checks if not c["ok"]]

    result = {
        "case": "refedit-e2e",
        "status": "fail" if failures else "pass",
        "cases_total": len(records),
        "cases_passed": sum(1 for r in records if not r["problems"] and not r.get("violations") and "metrics" in r),
        "failures": failures,
        "binary": {
            "path": str(refedit_binary),
            "sha256": _sha256(refedit_binary),
            "version": version.stdout.strip() or version.stderr.strip(),
        },
        "bundle": {"path": str(bundle), "sha256_before": bundle_sha_before, "sha256_after": bundle_sha_after},
        "thresholds": {"path": str(thresholds_path), "sha256": _sha256(thresholds_path), "gates": thresholds},
        "reference": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "pillow": PIL.__version__,
            "executable": sys.executable,
        },
        "summary": {
            "max_abs_diff_levels_unexcused": max(
                (r["metrics"]["max_abs_diff_levels_unexcused"] for r in records if "metrics" in r), default=None
            ),
            "worst_mean_abs_diff_levels": max(
                (r["metrics"]["mean_abs_diff_levels"] for r in records if "metrics" in r), default=None
            ),
        },
        "checks": checks,
        "cases": records,
        "wall_s": round(time.perf_counter() - started, 3),
    }
    (artifacts_dir / "result.json").write_text(json.dumps(result, indent=2, sort_keys=False) + "\n")

    assert not failures, f"{len(failures)} failure(s), see {artifacts_dir / 'result.json'}:\n" + "\n".join(failures)
