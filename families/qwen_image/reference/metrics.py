"""Image comparison metrics of the parity case, over 8-bit RGB arrays (H x W x 3)."""

from __future__ import annotations

import math

import numpy as np


def psnr_db(a: np.ndarray, b: np.ndarray) -> float | None:
    """Peak signal-to-noise ratio in dB over all channel values; None when identical."""
    _same_shape(a, b)
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return None if mse == 0 else 10.0 * math.log10(255.0**2 / mse)


def _gaussian(size: int = 11, sigma: float = 1.5) -> np.ndarray:
    x = np.arange(size, dtype=np.float64) - (size - 1) / 2
    g = np.exp(-(x**2) / (2 * sigma**2))
    return g / g.sum()


def _filter(img: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Separable 'valid' filtering of a 2-D array."""
    rows = np.apply_along_axis(lambda r: np.convolve(r, k, mode="valid"), 1, img)
    return np.apply_along_axis(lambda c: np.convolve(c, k, mode="valid"), 0, rows)


def ssim(a: np.ndarray, b: np.ndarray) -> float:
    """Mean SSIM (Wang et al. 2004): 11x11 Gaussian window, sigma 1.5, K1 0.01, K2 0.03,
    L 255, population statistics, valid region only; the mean over the RGB channels."""
    _same_shape(a, b)
    k = _gaussian()
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    vals = []
    for ch in range(a.shape[2]):
        x, y = a[..., ch].astype(np.float64), b[..., ch].astype(np.float64)
        mx, my = _filter(x, k), _filter(y, k)
        sxx = _filter(x * x, k) - mx * mx
        syy = _filter(y * y, k) - my * my
        sxy = _filter(x * y, k) - mx * my
        m = ((2 * mx * my + c1) * (2 * sxy + c2)) / ((mx * mx + my * my + c1) * (sxx + syy + c2))
        vals.append(float(m.mean()))
    return float(np.mean(vals))


def compare(actual: np.ndarray, expected: np.ndarray) -> dict:
    _same_shape(actual, expected)
    d = np.abs(actual.astype(np.int32) - expected.astype(np.int32))
    return {
        "psnr_db": psnr_db(actual, expected),
        "ssim": ssim(actual, expected),
        "mean_abs_diff_levels": float(d.mean()),
        "max_abs_diff_levels": int(d.max()),
        "frac_values_differing": float((d > 0).mean()),
    }


def _same_shape(a: np.ndarray, b: np.ndarray) -> None:
    if a.shape != b.shape or a.ndim != 3 or a.shape[2] != 3:
        raise ValueError(f"want two H x W x 3 arrays of one shape, got {a.shape} and {b.shape}")
