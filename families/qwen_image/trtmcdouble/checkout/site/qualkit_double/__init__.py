"""qualkit's TRTMC contract double, its Python side (not TRTMC code).

The double's image runs real Python, pytest and CMake; what cannot run here (the
TensorRT build, the native runtime, the 57 GB model, PyPI's multi-GB CUDA torch) stands
in as qualkit's Go binary, /usr/local/bin/trtmcdouble, and as the stand-in modules beside
this one (torch, torchvision, transformers, accelerate, tensorrt, diffusers, ftfy), each
marked QUALKIT_CONTRACT_DOUBLE. This module is how the stand-in Python files of a double's
checkout reach the binary.
"""

import os
import subprocess

QUALKIT_CONTRACT_DOUBLE = True
MARKER = "qualkit_contract_double"
BINARY = os.environ.get("QUALKIT_DOUBLE_BINARY", "/usr/local/bin/trtmcdouble")
MISSING = "QUALKIT_DOUBLE_MISSING_MODULES"


def refuse_if_missing(name):
    """A stand-in module named in QUALKIT_DOUBLE_MISSING_MODULES does not import: the
    double's negative tests take a module away this way."""
    missing = {m.strip() for m in os.environ.get(MISSING, "").split(",") if m.strip()}
    if name in missing:
        raise ModuleNotFoundError(f"No module named '{name}' (qualkit contract double: {MISSING})", name=name)


def run(role, *args):
    """Runs one of the binary's programs to completion; its output on failure."""
    done = subprocess.run([BINARY, role, *map(str, args)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{role} (qualkit contract double) exited {done.returncode}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def become(role, argv):
    """Replaces this process by one of the binary's programs (argv[0] names it)."""
    os.execv(BINARY, [role, *argv])
