"""qualkit's environment probe for TRTMC's image: which modules this interpreter imports,
at which version, whether torch sees CUDA, and the image's CUDA (its CUDA_VERSION, as
NVIDIA's CUDA images set it). It prints one JSON object and never fails on a missing
module (that is what it reports). qualkit runs it in preflight, before anything long,
with the same interpreter, environment and entrypoint as the stages.
"""

import importlib
import json
import os
import platform
import sys

# What the stages import: the builder and pytest; the correctness case's HF reference
# (diffusers' pipeline loads the checkpoint's Qwen2VLProcessor through transformers, whose
# Qwen2-VL image processor imports torchvision); numpy and PIL, which both use.
MODULES = ["tensorrt", "tensorrt_model_connect", "torch", "torchvision", "transformers", "diffusers", "ftfy",
           "accelerate", "pytest", "PIL", "numpy"]


def main() -> int:
    out = {"python": platform.python_version(), "executable": sys.executable,
           "image_cuda": os.environ.get("CUDA_VERSION", ""), "modules": {}}
    for name in MODULES:
        try:
            mod = importlib.import_module(name)
        except Exception as e:  # a broken install is a finding too
            out["modules"][name] = {"error": f"{type(e).__name__}: {e}"}
            continue
        info = {"version": str(getattr(mod, "__version__", "")), "file": str(getattr(mod, "__file__", ""))}
        if name == "torch":
            try:
                info["cuda"] = bool(mod.cuda.is_available())
                info["device_count"] = int(mod.cuda.device_count())
                info["cuda_version"] = str(mod.version.cuda)
            except Exception as e:
                info["cuda_error"] = str(e)
        out["modules"][name] = info
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
