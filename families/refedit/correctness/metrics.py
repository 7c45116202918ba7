"""Image comparison metrics and the threshold gates of the refedit correctness case.

Every metric is over channel values (H x W x 3), in 8-bit levels.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

GATED_METRICS = (
    "max_abs_diff_levels_unexcused",
    "values_off_away_from_ties",
    "max_abs_diff_levels",
    "mean_abs_diff_levels",
    "psnr_db",
    "frac_diff_gt1",
    "excused_frac",
    "changed_frac_vs_base",
)


def compare(
    actual: np.ndarray, expected: np.ndarray, excused: np.ndarray, near_tie: np.ndarray, base8: np.ndarray
) -> dict:
    """Metrics of actual (the program under test) against expected (the reference).

    excused: values the reference marks as a posterize threshold, where float32 may pick the
    neighbouring level. near_tie: values whose unrounded level is within
    reference.TIE_TOL_LEVELS of a rounding tie, where float32 may round 1 level the other
    way. base8: the quantized resized input, to show the output is a real edit.
    psnr_db is null when the images are identical (MSE 0).
    """
    if actual.shape != expected.shape:
        raise ValueError(f"shape {actual.shape} != reference {expected.shape}")
    diff = np.abs(actual.astype(np.int32) - expected.astype(np.int32))
    mse = float(np.mean(diff.astype(np.float64) ** 2))
    gt1 = diff > 1
    unexcused = diff[~excused]
    return {
        "values": int(diff.size),
        "max_abs_diff_levels": int(diff.max()),
        "max_abs_diff_levels_unexcused": int(unexcused.max()) if unexcused.size else 0,
        "mean_abs_diff_levels": float(diff.mean()),
        "mse": mse,
        "psnr_db": None if mse == 0 else 10.0 * math.log10(255.0**2 / mse),
        "values_off_away_from_ties": int(((diff > 0) & ~near_tie & ~excused).sum()),
        "near_tie_values": int(near_tie.sum()),
        "frac_diff_gt1": float(gt1.mean()),
        "values_diff_gt1": int(gt1.sum()),
        "excused_values": int(excused.sum()),
        "excused_frac": float(excused.mean()),
        "values_diff_gt1_excused": int((gt1 & excused).sum()),
        "changed_frac_vs_base": float(np.mean(actual != base8)),
        "reference_changed_frac_vs_base": float(np.mean(expected != base8)),
    }


def load_thresholds(path: str | Path) -> dict:
    data = json.loads(Path(path).read_text())
    if data.get("version") != 1:
        raise ValueError(f"{path}: version {data.get('version')!r}, want 1")
    for name, gate in data["gates"].items():
        if name not in GATED_METRICS:
            raise ValueError(f"{path}: gate {name!r} is not a metric ({', '.join(GATED_METRICS)})")
        if not ({"min", "max"} & gate.keys()) or not gate.get("why"):
            raise ValueError(f"{path}: gate {name!r} needs min or max, and why")
    for edit, over in data.get("overrides", {}).items():
        for name, gate in over.items():
            if name not in data["gates"] or not gate.get("why"):
                raise ValueError(f"{path}: override {edit}.{name} must refine a gate and say why")
    return data


def gates_for(thresholds: dict, edit: str) -> dict[str, dict]:
    gates = {name: dict(g) for name, g in thresholds["gates"].items()}
    for name, g in thresholds.get("overrides", {}).get(edit, {}).items():
        gates[name] = {**gates[name], **g}
    return gates


def violations(thresholds: dict, edit: str, metrics: dict) -> list[str]:
    """Every gate the metrics miss, as 'metric=value (gate)' strings; empty when all pass."""
    out = []
    for name, gate in gates_for(thresholds, edit).items():
        value = metrics[name]
        if name == "psnr_db" and value is None:
            continue  # identical images: infinite PSNR
        if "max" in gate and value > gate["max"]:
            out.append(f"{name}={value:.6g} > max {gate['max']}")
        if "min" in gate and value < gate["min"]:
            out.append(f"{name}={value:.6g} < min {gate['min']}")
    return out
