"""The diffusers reference backend's correctness case: one pytest item, GPU against CPU.

The bundle is loaded the way the server loads it (pipeline.Editor, device cuda, the
bundle's precision) and, a second time, on the CPU in float32. Both run the same request
(parity.json's case) from the same initial latents, drawn once from the seed as TRTMC
draws them (pipeline.Editor.noise); with --latents-file the case keeps that noise, raw
float32 as TRTMC's latent replay writes it, so a server replaying the seed's noise can be
held to the very noise this case's reference started from.
The outputs are compared with PSNR and SSIM against the thresholds parity.json holds for
the bundle's profile and precision, each with the reason for its value. Two controls
make the comparison mean something:

- discrimination: the CPU output for the mirrored reference image must FAIL the same
  gates, so a GPU path that lost or misplaced the reference image could not pass;
- influence on the GPU: the mirrored reference must change the GPU output by at least
  min_mean_abs_diff_levels, and the same request twice must give identical pixels.

Everything it saw goes to ARTIFACTS/result.json ("status": "pass" | "fail"), written before
the assertion, with the PNGs beside it. It skips (and the harness then fails the stage)
only when CUDA or diffusers is missing.
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import metrics
import pipeline  # sets CUBLAS_WORKSPACE_CONFIG before CUDA starts

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def load_parity(path: str | Path) -> dict:
    data = json.loads(Path(path).read_text())
    if data.get("version") != 1:
        raise ValueError(f"{path}: version {data.get('version')!r}, want 1")
    for key, th in data["thresholds"].items():
        for gate in ("psnr_db", "ssim", "influence"):
            if gate not in th or not th[gate].get("why"):
                raise ValueError(f"{path}: thresholds {key!r}: gate {gate!r} needs a value and a why")
    return data


def _gates(th: dict, m: dict) -> list[str]:
    """The parity gates a comparison fails (an empty list: it passes)."""
    failed = []
    if m["psnr_db"] is not None and m["psnr_db"] < th["psnr_db"]["min"]:
        failed.append(f"PSNR {m['psnr_db']:.2f} dB < {th['psnr_db']['min']}")
    if m["ssim"] < th["ssim"]["min"]:
        failed.append(f"SSIM {m['ssim']:.6f} < {th['ssim']['min']}")
    return failed


def test_gpu_matches_cpu_float32(request):
    pytest.importorskip("diffusers", reason="diffusers is not importable: the parity case needs it")
    import torch

    if not torch.cuda.is_available():
        pytest.skip(f"CUDA is not available (torch {torch.__version__}): the parity case compares the GPU with the CPU")

    bundle_path = Path(request.config.getoption("bundle"))
    artifacts = Path(request.config.getoption("artifacts_dir"))
    artifacts.mkdir(parents=True, exist_ok=True)
    parity = load_parity(request.config.getoption("parity"))
    bundle = pipeline.read_bundle(bundle_path)
    key = f"{bundle['profile']}/{bundle['precision']}"
    result = {
        "case": "test_gpu_matches_cpu_float32",
        "status": "fail",
        "bundle": str(bundle_path),
        "bundle_sha256": pipeline.bundle_sha256(bundle_path),
        "profile": bundle["profile"],
        "smoke": bundle["profile"] == "smoke",
        "thresholds_key": key,
        "host": {"python": platform.python_version(), "machine": platform.machine()},
    }

    def finish(problems: list[str]) -> None:
        result["problems"] = problems
        result["status"] = "pass" if not problems else "fail"
        (artifacts / "result.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
        assert not problems, "; ".join(problems)

    th = parity["thresholds"].get(key)
    if th is None:
        finish([f"parity.json has no thresholds for {key} (it has {', '.join(parity['thresholds'])}): a GPU-vs-CPU parity of this bundle is not defined"])
    result["thresholds"] = th

    case = parity["case"]
    image_path = ROOT / case["image"]
    image_bytes = image_path.read_bytes()
    ref = pipeline.decode_image(image_bytes)
    mirrored = ref.transpose(Image.FLIP_LEFT_RIGHT)
    prompt = case["prompt"]
    s = pipeline.parse_settings(case["settings"], bundle["defaults"])
    result["request"] = {"image": case["image"], "image_sha256": pipeline.sha256_bytes(image_bytes), "prompt": prompt, "settings": case["settings"]}

    timings = {}
    t = time.perf_counter()
    gpu = pipeline.Editor(bundle, device="cuda")
    timings["gpu_load_s"] = time.perf_counter() - t
    t = time.perf_counter()
    cpu = pipeline.Editor(bundle, device="cpu", precision="fp32")
    timings["cpu_load_s"] = time.perf_counter() - t
    result["runtime"] = {"gpu": gpu.runtime(), "cpu": cpu.runtime()}
    noise = gpu.noise(s)  # float32, from the seed, as TRTMC draws it: shared by every run below
    latents = gpu.initial_latents(s, noise)
    keep = request.config.getoption("latents_file")
    if keep:
        noise.tofile(keep)
        result["initial_latents"] = {"file": keep, "shape": list(noise.shape), "sha256": pipeline.sha256_bytes(noise.tobytes())}

    def run(editor, image, name):
        t = time.perf_counter()
        px = pipeline.quantize(editor.edit_pixels(image, prompt, s, latents))
        timings[name + "_s"] = time.perf_counter() - t
        (artifacts / f"{name}.png").write_bytes(pipeline.encode_png(px))
        return px

    out = {
        "gpu": run(gpu, ref, "gpu"),
        "gpu_repeat": run(gpu, ref, "gpu_repeat"),
        "gpu_mirrored": run(gpu, mirrored, "gpu_mirrored"),
        "cpu": run(cpu, ref, "cpu"),
        "cpu_mirrored": run(cpu, mirrored, "cpu_mirrored"),
    }
    result["timings_s"] = {k: round(v, 3) for k, v in timings.items()}
    result["output_sha256"] = {k: pipeline.sha256_bytes(pipeline.encode_png(v)) for k, v in out.items()}
    cmp = {
        "gpu_vs_cpu": metrics.compare(out["gpu"], out["cpu"]),
        "gpu_vs_cpu_mirrored": metrics.compare(out["gpu"], out["cpu_mirrored"]),
        "gpu_vs_gpu_mirrored": metrics.compare(out["gpu"], out["gpu_mirrored"]),
        "gpu_vs_gpu_repeat": metrics.compare(out["gpu"], out["gpu_repeat"]),
    }
    result["metrics"] = cmp
    result["nondeterministic_ops"] = {"gpu": gpu.nondeterministic_ops, "cpu": cpu.nondeterministic_ops}

    problems = [f"GPU vs CPU float32: {f}" for f in _gates(th, cmp["gpu_vs_cpu"])]
    if not _gates(th, cmp["gpu_vs_cpu_mirrored"]):
        problems.append(
            "control: the GPU output also passes against the CPU output of the MIRRORED reference "
            f"(PSNR {cmp['gpu_vs_cpu_mirrored']['psnr_db']}, SSIM {cmp['gpu_vs_cpu_mirrored']['ssim']:.6f}): "
            "the gates cannot tell the reference image apart"
        )
    if not np.array_equal(out["gpu"], out["gpu_repeat"]):
        problems.append(f"the same request twice on the GPU gave different pixels: {cmp['gpu_vs_gpu_repeat']}")
    need = th["influence"]["min_mean_abs_diff_levels"]
    got = cmp["gpu_vs_gpu_mirrored"]["mean_abs_diff_levels"]
    if got < need:
        problems.append(f"reference influence on the GPU: the mirrored reference moved the output by {got:.4f} levels on average, want >= {need}")
    finish(problems)
