"""A NumPy rendering of TRTMC's pair metrics, for qualkit's Go port (internal/quality/trtmc.go).

Each function restates, in NumPy, the formula TRTMC's own comparator applies:

- e9132e79: tests/e2e/models/qwen_image/e2e_plugins/comparators/diffusion.py @ e9132e79
  (_compute_psnr in float32 with 100.0 for MSE < 1e-12; _compute_ssim over the whole
  image in float64; images loaded as float32 RGB / 255 by _cross_compare_frames).
- families: families/qwen_image/tests/test_e2e.py @ 9777fef7 (_assert_parity: PSNR
  20 log10(1 / RMSE) from a float32 RMSE, inf when 0; the same global SSIM with its
  moments taken in float32).

`python trtmc_metrics.py` writes the fixed images (from a seeded generator) and
trtmc_metrics.golden.json; test_trtmc_metrics.py checks that the golden file is what this
rendering computes, and the Go test that the port matches it to 1e-6.
"""

import json
import math
import sys
from pathlib import Path

import numpy as np
from PIL import Image

HERE = Path(__file__).resolve().parent
IMAGES = HERE / "trtmc-metrics"
GOLDEN = HERE / "trtmc_metrics.golden.json"

# (reference, output) pairs measured; every file is under IMAGES.
PAIRS = [
    ("photo.png", "edit.png"),
    ("photo.png", "photo.png"),
    ("photo.png", "photo-rgba.png"),
    ("flat-a.png", "flat-b.png"),
    ("edit.png", "noise.png"),
    ("photo.png", "near.png"),
]


def load(name):
    return np.asarray(Image.open(IMAGES / name).convert("RGB"), dtype=np.float32) / 255.0


def psnr_e9132e79(out, ref):
    a = np.asarray(out, dtype=np.float32)
    b = np.asarray(ref, dtype=np.float32)
    mse = np.mean((a - b) ** 2)
    if mse < 1e-12:
        return 100.0
    return float(10.0 * math.log10(1.0 / mse))


def ssim_e9132e79(out, ref):
    a = np.asarray(out, dtype=np.float64)
    b = np.asarray(ref, dtype=np.float64)
    mu_a, mu_b = np.mean(a), np.mean(b)
    var_a, var_b = np.var(a), np.var(b)
    cov = np.mean((a - mu_a) * (b - mu_b))
    c1, c2 = 0.01**2, 0.03**2
    return float((2 * mu_a * mu_b + c1) * (2 * cov + c2) / ((mu_a**2 + mu_b**2 + c1) * (var_a + var_b + c2)))


def psnr_families(out, ref):
    rmse = float(np.sqrt(np.mean((out - ref) ** 2)))
    return float("inf") if rmse == 0 else float(20.0 * np.log10(1.0 / rmse))


def ssim_families(out, ref):
    ml, mr = float(out.mean()), float(ref.mean())
    vl, vr = float(out.var()), float(ref.var())
    cov = float(np.mean((out - ml) * (ref - mr)))
    return (2 * ml * mr + 0.01**2) * (2 * cov + 0.03**2) / ((ml**2 + mr**2 + 0.01**2) * (vl + vr + 0.03**2))


def measure():
    rows = []
    for ref_name, out_name in PAIRS:
        ref, out = load(ref_name), load(out_name)
        pf = psnr_families(out, ref)
        rows.append({
            "reference": ref_name,
            "output": out_name,
            "e9132e79": {"psnr": psnr_e9132e79(out, ref), "ssim": ssim_e9132e79(out, ref)},
            # JSON has no Infinity: null stands for it (the Go port writes IdenticalPSNR).
            "families": {"psnr": None if math.isinf(pf) else pf, "ssim": ssim_families(out, ref)},
        })
    return {"numpy": np.__version__, "pairs": rows}


def make_images():
    rng = np.random.Generator(np.random.PCG64(20261203))
    h, w = 48, 64
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x / w, y / h, (x + y) / (w + h)], axis=-1)
    photo = np.clip(base * 0.8 + 0.1 + rng.normal(0, 0.05, base.shape), 0, 1)
    edit = np.clip(photo[..., ::-1] * 0.7 + 0.2 + rng.normal(0, 0.08, base.shape), 0, 1)
    noise = rng.uniform(0, 1, base.shape)
    near = np.clip(photo + rng.normal(0, 0.004, base.shape), 0, 1)

    def u8(a):
        return (a * 255 + 0.5).astype(np.uint8)

    IMAGES.mkdir(exist_ok=True)
    Image.fromarray(u8(photo), "RGB").save(IMAGES / "photo.png")
    Image.fromarray(u8(edit), "RGB").save(IMAGES / "edit.png")
    Image.fromarray(u8(noise), "RGB").save(IMAGES / "noise.png")
    Image.fromarray(u8(near), "RGB").save(IMAGES / "near.png")
    alpha = (rng.uniform(0, 1, (h, w, 1)) * 255).astype(np.uint8)
    Image.fromarray(np.concatenate([u8(photo), alpha], axis=-1), "RGBA").save(IMAGES / "photo-rgba.png")
    Image.fromarray(np.full((h, w, 3), 128, np.uint8), "RGB").save(IMAGES / "flat-a.png")
    Image.fromarray(np.full((h, w, 3), 131, np.uint8), "RGB").save(IMAGES / "flat-b.png")


if __name__ == "__main__":
    if "--images" in sys.argv:
        make_images()
    GOLDEN.write_text(json.dumps(measure(), indent=1) + "\n")
