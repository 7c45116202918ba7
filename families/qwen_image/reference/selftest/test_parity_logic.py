"""test_parity.py's own logic on the CPU, with "cuda" standing in for the CPU: the gates
pass for identical float32 runs, the mirrored control fails them, result.json and the PNGs
are written. (The real case needs a GPU; this proves the case, not the GPU.)"""

from __future__ import annotations

import json
import types

import pytest

import pipeline
import test_parity
from conftest import REFERENCE


def fake_request(bundle, artifacts, parity, latents_file=None):
    opts = {"bundle": str(bundle), "artifacts_dir": str(artifacts), "parity": str(parity), "latents_file": latents_file}
    return types.SimpleNamespace(config=types.SimpleNamespace(getoption=lambda k: opts[k]))


@pytest.fixture
def cpu_as_cuda(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(pipeline, "resolve_device", lambda requested: "cpu")


def test_parity_case_passes_on_identical_runs_and_writes_evidence(cpu_as_cuda, bundle_path, tmp_path):
    art = tmp_path / "artifacts"
    noise = tmp_path / "initial-latents.f32"
    test_parity.test_gpu_matches_cpu_float32(fake_request(bundle_path, art, REFERENCE / "parity.json", str(noise)))
    res = json.loads((art / "result.json").read_text())
    assert res["status"] == "pass" and res["problems"] == [] and res["smoke"] is True
    # The noise it kept is TRTMC's for the case's seed and size, raw float32 (latents.py's format).
    import numpy as np

    want = np.random.default_rng(42).standard_normal((1, 1, 4, 64, 64), dtype=np.float32)
    assert noise.read_bytes() == want.tobytes()
    assert res["initial_latents"]["sha256"] == pipeline.sha256_bytes(want.tobytes())
    m = res["metrics"]
    assert m["gpu_vs_cpu"]["psnr_db"] is None  # identical: both ran on the CPU here
    assert m["gpu_vs_cpu_mirrored"]["psnr_db"] < 55 and m["gpu_vs_cpu_mirrored"]["ssim"] < 0.999
    assert m["gpu_vs_gpu_mirrored"]["mean_abs_diff_levels"] >= 0.25
    for name in ("gpu", "gpu_repeat", "gpu_mirrored", "cpu", "cpu_mirrored"):
        assert (art / f"{name}.png").stat().st_size > 0


def test_parity_case_fails_without_thresholds_for_the_bundle(cpu_as_cuda, bundle_path, tmp_path):
    data = json.loads((REFERENCE / "parity.json").read_text())
    data["thresholds"] = {"checkpoint/bf16": data["thresholds"]["smoke/fp32"]}
    p = tmp_path / "parity.json"
    p.write_text(json.dumps(data))
    art = tmp_path / "artifacts"
    with pytest.raises(AssertionError, match="no thresholds for smoke/fp32"):
        test_parity.test_gpu_matches_cpu_float32(fake_request(bundle_path, art, p))
    assert json.loads((art / "result.json").read_text())["status"] == "fail"
