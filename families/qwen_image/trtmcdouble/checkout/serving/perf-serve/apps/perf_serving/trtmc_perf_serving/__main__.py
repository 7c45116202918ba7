"""qualkit contract double: `python3 -m trtmc_perf_serving ARGS` runs qualkit's Go imitation of
trtmc-perf-serve with the same arguments. What TRTMC's server computes in Python for
/v1/serving/info (platform.py @ ca938e40: fingerprint and host_details) is computed here
the same way, in this interpreter, and handed over in QUALKIT_DOUBLE_PLATFORM."""

import importlib.metadata
import json
import os
import platform
import socket
import sys

from qualkit_double import become


def _version(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _blocks():
    import torch

    names = ("torch", "transformers", "diffusers", "timm", "nemo_toolkit", "accelerate")
    fingerprint = {"packages": {n: _version(n) for n in names if _version(n)},
                   "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()}
    host = {"hostname": socket.gethostname(), "python": platform.python_version(), "machine": platform.machine()}
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability(0)
        fingerprint["gpu_arch"] = f"sm{major}{minor}"
        host["gpu_name"] = torch.cuda.get_device_name(0)
    else:
        fingerprint["gpu_arch"] = "cpu"
    return {"platform": fingerprint, "host": host}


os.environ["QUALKIT_DOUBLE_PLATFORM"] = json.dumps(_blocks())
become("trtmc-perf-serve", sys.argv[1:])
