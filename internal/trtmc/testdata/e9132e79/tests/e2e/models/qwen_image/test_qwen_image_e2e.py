"""qualkit's stand-in for TRTMC e9132e79's e2e case of the qwen_image family, not TRTMC's
code. Real pytest runs it at TRTMC's node id

    tests/e2e/models/qwen_image/test_qwen_image_e2e.py::test_model_e2e[qwen-image-edit-2511]

on a prebuilt bundle in --engine-dir, as the row runs it: a case per testcase of the
manifests MODEL.toml lists, deselected unless --e2e-model/--e2e-testcase name it; a skip
when the build profile cannot import diffusers or ftfy (MODEL.toml's preflight); the
TRT side through `trtmc run` (--trtmc-binary), the HF reference beside it in
<artifacts>/<case>/hf_frames/frame_0000.png, TRTMC's thresholds, and
<artifacts>/<case>/result.json and e2e_run.log. The model work is qualkit's Go binary's.
"""

import importlib
import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

MODEL_DIR = Path(__file__).resolve().parent
MANIFESTS = ["manifests/qwen-image-edit-2511.json", "manifests/qwen-image-l0.json"]


def _cases():
    cases = {}
    for rel in MANIFESTS:
        manifest = json.loads((MODEL_DIR / rel).read_text())
        for case in manifest["testcases"]:
            cases[case["name"]] = (manifest, case)
    return cases


CASES = _cases()


def pytest_generate_tests(metafunc):
    if "case_name" in metafunc.fixturenames:
        models = set(metafunc.config.getoption("--e2e-model") or [])
        testcases = set(metafunc.config.getoption("--e2e-testcase") or [])
        names = [n for n, (m, _) in CASES.items()
                 if (not models or n in models or m["family"] in models) and (not testcases or n in testcases)]
        metafunc.parametrize("case_name", sorted(names))


def _metrics(actual, expected):
    """e2e_plugins/comparators/diffusion.py @ e9132e79's global measures, in float64."""
    a, b = actual.astype(np.float64), expected.astype(np.float64)
    mse = float(np.mean((a - b) ** 2))
    psnr = 100.0 if mse < 1e-12 else 10.0 * np.log10(1.0 / mse)
    ma, mb = a.mean(), b.mean()
    cov = np.mean((a - ma) * (b - mb))
    ssim = ((2 * ma * mb + 0.01**2) * (2 * cov + 0.03**2)) / ((ma**2 + mb**2 + 0.01**2) * (a.var() + b.var() + 0.03**2))
    return {"psnr": float(psnr), "ssim": float(ssim)}


def _result(out, case_name, status, metrics, thresholds, message, log):
    out.mkdir(parents=True, exist_ok=True)
    doc = {"case_name": case_name, "status": status, "failure_type": None if status == "pass" else "runtime_error",
           "oracle_level": "L1_external_reference", "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "stages": {"end_to_end": {"status": "passed" if status == "pass" else "failed", "message": message,
                                     "metrics": {k: {"value": v, "threshold": thresholds[k], "operator": ">=",
                                                     "passed": v >= thresholds[k]} for k, v in metrics.items()}}},
           "log_file": "e2e_run.log", "qualkit_contract_double": True}
    (out / "result.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out / "e2e_run.log").write_text("qualkit contract double: TRTMC's case played by qualkit's binary\n" + "\n".join(log) + "\n")


def test_model_e2e(case_name, request, tmp_path):
    for module in ("diffusers", "ftfy"):
        try:
            importlib.import_module(module)
        except ImportError:
            pytest.skip(f"Module {module} not importable in build profile")
    option = request.config.getoption
    if os.environ.get("QUALKIT_DOUBLE_CASE") == "fail":
        raise AssertionError("qualkit contract double: the case fails on purpose (QUALKIT_DOUBLE_CASE=fail)")
    assert not option("--rebuild-engines"), "qualkit contract double: the case runs on the prebuilt bundle only"
    assert option("--engine-dir"), "--engine-dir is required: the case finds the bundle there"
    assert option("--hf-python"), "--hf-python is required: the HF diffusers reference runs in it"
    manifest, case = CASES[case_name]
    bundle = Path(option("--engine-dir")) / manifest["bundle"]
    trtmc = Path(option("--trtmc-binary"))
    assert trtmc.is_file(), f"--trtmc-binary {trtmc}: no such file"
    plugins = option("--model-plugin-dir") or os.environ.get("TRTMC_MODEL_PLUGIN_DIR") or str(trtmc.parent / "models")
    assert (Path(plugins) / "qwen_image" / "libtrtmc_model_qwen_image.so").is_file(), f"{plugins} holds no qwen_image plugin"
    height, width = int(case.get("height") or manifest["image_height"]), int(case.get("width") or manifest["image_width"])
    image = MODEL_DIR / case["test_image"]
    output = tmp_path / "trt.png"
    log = [f"bundle: {bundle}"]
    run = subprocess.run([str(trtmc), "run", str(bundle), "--prompt", case["prompt"], "--image", str(image),
                          "--negative-prompt", case.get("negative_prompt", " "), "--cfg-scale", str(case["cfg_scale"]),
                          "--num-inference-steps", str(case["num_inference_steps"]), "--seed", str(case["seed"]),
                          "--height", str(height), "--width", str(width), "--output", str(output),
                          "--model-plugin-dir", plugins], capture_output=True, text=True)
    log += [run.stdout.strip(), run.stderr.strip()]
    artifacts = Path(option("--e2e-artifacts-dir") or tmp_path / "artifacts") / case_name
    thresholds = json.loads((MODEL_DIR / "thresholds" / f"{case_name}.json").read_text())["threshold_overrides"]
    if run.returncode != 0:
        _result(artifacts, case_name, "fail", {}, thresholds, f"trtmc run exited {run.returncode}", log)
        pytest.fail(f"trtmc run: {run.stderr.strip()}")
    from PIL import Image

    reference = _reference(case, image, height, width)
    frames = artifacts / "hf_frames"
    frames.mkdir(parents=True, exist_ok=True)
    reference.save(frames / "frame_0000.png")
    actual = np.asarray(Image.open(output).convert("RGB"), dtype=np.float32) / 255.0
    expected = np.asarray(reference, dtype=np.float32) / 255.0
    metrics = _metrics(actual, expected)
    ok = all(metrics[k] >= thresholds[k] for k in metrics)
    _result(artifacts, case_name, "pass" if ok else "fail", metrics, thresholds, "" if ok else "below threshold", log)
    assert ok, f"parity below TRTMC's thresholds: {metrics}"


def _reference(case, image, height, width):
    from diffusers import DiffusionPipeline
    from PIL import Image

    pipeline = DiffusionPipeline.from_pretrained(_snapshot(), local_files_only=True).to("cuda")
    kwargs = {"prompt": case["prompt"], "height": height, "width": width,
              "num_inference_steps": int(case["num_inference_steps"]), "image": Image.open(image).convert("RGB"),
              "negative_prompt": case.get("negative_prompt", " "), "true_cfg_scale": float(case["cfg_scale"])}
    return pipeline(**kwargs).images[0].convert("RGB")


def _snapshot():
    from huggingface_hub import snapshot_download

    manifest, _ = next(iter(CASES.values()))
    return snapshot_download(repo_id=manifest["hf_id"], revision=manifest.get("hf_revision"), local_files_only=True)
