"""Options of the diffusers reference backend's parity case (test_parity.py).

Like TRTMC's e2e case, a missing requirement of the host (CUDA, diffusers) is a pytest skip
with the reason; the harness counts any skip as a failure. Leaving --bundle or
--artifacts-dir out is a usage error.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
PARITY_FILE = "test_parity.py"
REQUIRED = ("--bundle", "--artifacts-dir")


def pytest_addoption(parser):
    group = parser.getgroup("qwen-diffusers", "diffusers reference parity case")
    group.addoption("--bundle", metavar="PATH", help="the bundle written by `pipeline.py bundle` (required)")
    group.addoption("--artifacts-dir", metavar="DIR", help="where the PNGs and result.json go (required)")
    group.addoption(
        "--parity",
        metavar="PATH",
        default=str(HERE / "parity.json"),
        help="the case and its thresholds (default: parity.json beside this file)",
    )
    group.addoption(
        "--latents-file",
        metavar="PATH",
        help="keep the initial noise the case drew there, raw float32 (TRTMC's initial_latents.f32 format)",
    )


def pytest_collection_modifyitems(config, items):
    # Required only for the parity case, so the CPU selftests below this folder run without them.
    if not any(item.path.name == PARITY_FILE for item in items):
        return
    missing = [o for o in REQUIRED if not config.getoption(o.lstrip("-").replace("-", "_"))]
    if missing:
        raise pytest.UsageError(f"{PARITY_FILE} needs {', '.join(missing)}")
