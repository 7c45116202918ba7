"""CPU selftests of the diffusers reference backend (pipeline, server, native Task, metrics).

They need torch, transformers, diffusers (the pinned release), torchvision and aiohttp:
    python -m venv /tmp/qwen-venv && /tmp/qwen-venv/bin/pip install torch==2.11.0 \
        torchvision==0.26.0 transformers==5.17.0 diffusers==0.40.0 aiohttp pillow numpy pytest
    /tmp/qwen-venv/bin/python -m pytest -p no:cacheprovider families/qwen_image/reference/selftest
A missing package fails the run (no skips). Everything runs with --device cpu at tiny
settings; each edit still VAE-encodes a ~1 MP condition image (the pipeline's own resize),
so an edit takes seconds on a laptop-class CPU.
"""

from __future__ import annotations

import argparse
import importlib
import socket
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REFERENCE = HERE.parent
ROOT = REFERENCE.parents[2]
FIXTURES = ROOT / "fixtures" / "images"
if str(REFERENCE) not in sys.path:
    sys.path.insert(0, str(REFERENCE))

NEEDS = ("torch", "torchvision", "transformers", "diffusers", "aiohttp", "PIL", "numpy")
# Small enough for a CPU, still the whole pipeline: 64x64 output (16 noise tokens after
# packing), one step, true CFG on.
TINY = {"size": "64x64", "seed": "7", "num_inference_steps": "1", "true_cfg_scale": "4.0", "negative_prompt": " "}


def pytest_configure(config):
    missing = []
    for name in NEEDS:
        try:
            importlib.import_module(name)
        except ImportError as e:
            missing.append(f"{name} ({e})")
    if missing:
        raise pytest.UsageError("the diffusers selftests need " + ", ".join(missing) + ": see selftest/conftest.py for the venv")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def bundle_path(tmp_path_factory) -> Path:
    import pipeline

    out = tmp_path_factory.mktemp("bundle") / "smoke.bundle"
    assert pipeline.main(["bundle", "--smoke", "-o", str(out)]) == 0
    return out


@pytest.fixture(scope="session")
def editor(bundle_path):
    import pipeline

    return pipeline.Editor(pipeline.read_bundle(bundle_path), device="cpu")


@pytest.fixture(scope="session")
def photo() -> bytes:
    return (FIXTURES / "photo-640x382.png").read_bytes()


@pytest.fixture(scope="session")
def house() -> bytes:
    return (FIXTURES / "house-640x382.png").read_bytes()


def tiny_settings(**over):
    import pipeline

    fields = dict(TINY, **over)
    return pipeline.parse_settings(fields, pipeline.SMOKE_CONFIG["defaults"])


def namespace(**kw):
    return argparse.Namespace(**kw)
