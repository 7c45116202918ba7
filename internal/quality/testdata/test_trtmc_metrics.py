"""The golden numbers the Go port is held to are what the NumPy rendering computes."""

import json

import pytest

import trtmc_metrics


def test_golden_is_the_numpy_rendering():
    golden = json.loads(trtmc_metrics.GOLDEN.read_text())
    now = trtmc_metrics.measure()
    assert len(golden["pairs"]) == len(trtmc_metrics.PAIRS)
    for want, got in zip(golden["pairs"], now["pairs"]):
        assert (want["reference"], want["output"]) == (got["reference"], got["output"])
        for layout in ("e9132e79", "families"):
            for key in ("psnr", "ssim"):
                if want[layout][key] is None:
                    assert got[layout][key] is None
                else:
                    assert got[layout][key] == pytest.approx(want[layout][key], abs=1e-9), (want["output"], layout, key)
