"""qualkit's environment probe for TRTMC's image: which modules this interpreter imports,
at which version, and whether torch sees CUDA. It prints one JSON object and never fails
on a missing module (that is what it reports). qualkit runs it in preflight, before
anything long, with the same interpreter and environment as the stages.
"""

import importlib
import json
import platform
import sys

MODULES = ["tensorrt", "tensorrt_model_connect", "torch", "diffusers", "ftfy", "pytest", "PIL", "numpy"]


def main() -> int:
    out = {"python": platform.python_version(), "executable": sys.executable, "modules": {}}
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
