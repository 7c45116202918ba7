"""The e2e case against the real refedit binary: a good bundle passes, a wrong one fails.

The bundle is refedit's whole edit program (the binary has no edit constants of its own),
so changing one op parameter in it is exactly "a bundle whose program is wrong". Each
tampered bundle must fail the e2e case, on the cases of the tampered edit and no other.

The binary: $REFEDIT_BINARY, else built here with `go build` (Go is a project requirement;
without either this fails, with the reason).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CORRECTNESS = Path(__file__).resolve().parent.parent
REPO = CORRECTNESS.parent.parent.parent
E2E = CORRECTNESS / "test_refedit_e2e.py"
HANG_S = 3600  # stops a hung command, no speed expectation (test_reference.py says why)


@pytest.fixture(scope="module")
def binary(tmp_path_factory) -> Path:
    if os.environ.get("REFEDIT_BINARY"):
        path = Path(os.environ["REFEDIT_BINARY"])
        assert path.is_file(), f"REFEDIT_BINARY={path} does not exist"
        return path
    go = shutil.which("go")
    assert go, "neither REFEDIT_BINARY nor `go` on PATH: cannot get a refedit binary"
    out = tmp_path_factory.mktemp("bin") / "refedit"
    proc = subprocess.run(
        [go, "build", "-o", str(out), "./families/refedit/cmd/refedit"],
        cwd=REPO, capture_output=True, text=True, timeout=HANG_S, env={**os.environ, "CGO_ENABLED": "0"},
    )
    assert proc.returncode == 0, f"go build failed:\n{proc.stderr}"
    return out


def _build(binary: Path, out: Path, *flags: str) -> dict:
    proc = subprocess.run([str(binary), "build", "-o", str(out), *flags], capture_output=True, text=True, timeout=HANG_S)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


def _e2e(tmp_path: Path, binary: Path, bundle: Path) -> tuple[subprocess.CompletedProcess, dict]:
    art = tmp_path / "art"
    cmd = [sys.executable, "-m", "pytest", str(E2E), "-q", "-p", "no:cacheprovider",
           "--refedit-binary", str(binary), "--bundle", str(bundle), "--artifacts-dir", str(art)]
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=HANG_S)
    return proc, json.loads((art / "result.json").read_text())


def _op(bundle: dict, edit: str) -> dict:
    return next(e["op"] for e in bundle["edits"] if e["name"] == edit)


def test_good_bundle_passes(tmp_path, binary):
    _build(binary, tmp_path / "good.bundle")
    proc, result = _e2e(tmp_path, binary, tmp_path / "good.bundle")
    assert proc.returncode == 0 and result["status"] == "pass", result["failures"]


def test_bundle_defaults_do_not_matter(tmp_path, binary):
    # The case sends every setting explicitly, so it qualifies any bundle's program.
    _build(binary, tmp_path / "d.bundle", "--width", "64", "--height", "32", "--num-inference-steps", "9",
           "--guidance-scale", "2.5", "--seed", "77")
    proc, result = _e2e(tmp_path, binary, tmp_path / "d.bundle")
    assert proc.returncode == 0 and result["status"] == "pass", result["failures"]


def _scale(values, i, j, delta):
    values[i][j] += delta


TAMPERS = {
    "sepia matrix[0][0] + 0.05": ("sepia", lambda op: _scale(op["matrix"], 0, 0, 0.05)),
    "sepia matrix[2][2] - 0.01": ("sepia", lambda op: _scale(op["matrix"], 2, 2, -0.01)),
    "grayscale weights R/B swapped": ("grayscale", lambda op: op.update(matrix=[[0.114, 0.587, 0.299]] * 3)),
    "contrast offset -0.26": ("contrast", lambda op: op.update(offset=[-0.26] * 3)),
    "warm red 1.10": ("warm", lambda op: _scale(op["matrix"], 0, 0, -0.05)),
    "invert offset blue 0.99": ("invert", lambda op: op.update(offset=[1, 1, 0.99])),
    "gamma 0.6": ("brighten", lambda op: op.update(exponent=0.6)),
    "gamma 0.62": ("brighten", lambda op: op.update(exponent=0.62)),
    "posterize 5 levels": ("posterize", lambda op: op.update(levels=5)),
    "mirror also flips y": ("mirror", lambda op: op.update(flip_y=True)),
    "blur kernel 1/4 1/2 1/4": ("blur", lambda op: op.update(kernel=[0.25, 0.5, 0.25])),
    "sharpen: one blur pass too many": ("sharpen", lambda op: op.update(passes=2)),
    "sharpen amount 0.9": ("sharpen", lambda op: op.update(amount=0.9)),
    "pixelate block 15": ("pixelate", lambda op: op.update(block=15)),
    "grain amplitude 0.15": ("grain", lambda op: op.update(amplitude=0.15)),
}


@pytest.mark.parametrize("name", list(TAMPERS))
def test_tampered_bundle_fails(tmp_path, binary, name):
    edit, change = TAMPERS[name]
    bundle = _build(binary, tmp_path / "good.bundle")
    change(_op(bundle, edit))
    bad = tmp_path / "bad.bundle"
    bad.write_text(json.dumps(bundle, indent=2) + "\n")
    proc, result = _e2e(tmp_path, binary, bad)
    assert proc.returncode == 1 and result["status"] == "fail", f"{name}: the e2e case passed"
    failing = {r["edit"] for r in result["cases"] if r.get("violations") or r["problems"]}
    assert failing == {edit}, result["failures"]
    worst = [f for f in result["failures"] if f"({edit}):" in f]
    assert worst and f"({edit}): " in proc.stdout  # the assertion message names case and metric
    print(f"{name}: {len(worst)} gate failures, e.g. {worst[0]}")
