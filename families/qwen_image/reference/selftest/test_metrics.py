"""The parity case's metrics and its thresholds file."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import metrics
import test_parity
from conftest import REFERENCE


def test_identical_images():
    a = np.random.default_rng(0).integers(0, 256, (40, 50, 3), dtype=np.uint8)
    m = metrics.compare(a, a.copy())
    assert m["psnr_db"] is None and m["ssim"] == pytest.approx(1.0) and m["max_abs_diff_levels"] == 0


def test_one_level_everywhere_is_48_dB():
    a = np.full((32, 32, 3), 100, np.uint8)
    assert metrics.psnr_db(a, a + 1) == pytest.approx(20 * math.log10(255), abs=1e-9)


def test_ssim_orders_by_damage_and_is_symmetric():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, (64, 64, 3)).astype(np.uint8)
    small = np.clip(a.astype(int) + rng.integers(-2, 3, a.shape), 0, 255).astype(np.uint8)
    large = np.clip(a.astype(int) + rng.integers(-40, 41, a.shape), 0, 255).astype(np.uint8)
    s_small, s_large = metrics.ssim(a, small), metrics.ssim(a, large)
    assert 1.0 > s_small > s_large > 0
    assert metrics.ssim(small, a) == pytest.approx(s_small)


def test_ssim_of_a_constant_pair_is_one():
    a = np.full((16, 16, 3), 7, np.uint8)
    assert metrics.ssim(a, a) == pytest.approx(1.0)


def test_shape_mismatch_is_an_error():
    with pytest.raises(ValueError):
        metrics.compare(np.zeros((4, 4, 3), np.uint8), np.zeros((4, 5, 3), np.uint8))


def test_parity_file_loads_and_every_gate_says_why():
    data = test_parity.load_parity(REFERENCE / "parity.json")
    th = data["thresholds"]["smoke/fp32"]
    assert th["psnr_db"]["min"] > 46.5 and th["ssim"]["min"] > 0.99491  # the measured mirrored control must fail them


def test_parity_file_without_why_is_refused(tmp_path):
    data = json.loads((REFERENCE / "parity.json").read_text())
    del data["thresholds"]["smoke/fp32"]["ssim"]["why"]
    p = tmp_path / "parity.json"
    p.write_text(json.dumps(data))
    with pytest.raises(ValueError):
        test_parity.load_parity(p)


def test_gates():
    th = test_parity.load_parity(REFERENCE / "parity.json")["thresholds"]["smoke/fp32"]
    assert test_parity._gates(th, {"psnr_db": None, "ssim": 1.0}) == []
    assert test_parity._gates(th, {"psnr_db": 96.0, "ssim": 1.0}) == []
    assert len(test_parity._gates(th, {"psnr_db": 46.5, "ssim": 0.9949})) == 2
