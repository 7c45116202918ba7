"""The native Task of the diffusers reference backend: one edit, the server's code path minus HTTP.

    python native.py BUNDLE --image IN --prompt=P [--size=WxH] [--seed=S]
        [--num-inference-steps=N] [--true-cfg-scale=G] [--negative-prompt=TEXT]
        --output OUT.png [--device cuda|cuda:N|cpu]

Settings left out take the bundle's defaults, exactly as absent HTTP fields do (the same
pipeline.parse_settings). Give values as --flag=VALUE: a prompt may start with "-".
Prints one JSON line: {"backend", "bundle_sha256", "image", "input_sha256", "output",
"output_sha256", "settings", "timing": {"task_ms", "load_s"}}; task_ms is the same measure as
the server's (pipeline.Editor.edit). Exit codes: 0 done, 1 the work failed (bundle, device,
image, pipeline), 2 a command line to fix (missing flag, invalid setting).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pipeline  # noqa: E402

FLAGS = {
    "size": "--size",
    "seed": "--seed",
    "num_inference_steps": "--num-inference-steps",
    "true_cfg_scale": "--true-cfg-scale",
    "negative_prompt": "--negative-prompt",
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="native.py", description="one edit through the diffusers reference pipeline")
    ap.add_argument("bundle")
    ap.add_argument("--image", required=True)
    ap.add_argument("--prompt", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--device", default="cuda", help="cuda (default), cuda:N, or cpu (only when given explicitly)")
    for field, flag in FLAGS.items():
        ap.add_argument(flag, dest=field, default=None)
    args = ap.parse_args(argv)
    fields = {f: getattr(args, f) for f in FLAGS if getattr(args, f) is not None}
    try:
        bundle = pipeline.read_bundle(args.bundle)
        pipeline.check_prompt(args.prompt)
        settings = pipeline.parse_settings(fields, bundle["defaults"])
    except pipeline.SettingError as e:
        print(f"native.py: {FLAGS.get(e.param, '--' + e.param)}: {e}", file=sys.stderr)
        return 2
    except pipeline.BundleError as e:
        print(f"native.py: {e}", file=sys.stderr)
        return 1
    try:
        image = Path(args.image).read_bytes()
        editor = pipeline.Editor(bundle, device=args.device)
        res = editor.edit(image, args.prompt, settings)
    except (OSError, pipeline.DeviceError, pipeline.BundleError, pipeline.ImageError) as e:
        print(f"native.py: {e}", file=sys.stderr)
        return 1
    Path(args.output).write_bytes(res.png)
    print(
        json.dumps(
            {
                "backend": "diffusers",
                "bundle_sha256": pipeline.file_sha256(Path(args.bundle)),
                "image": args.image,
                "input_sha256": res.input_sha256,
                "output": args.output,
                "output_sha256": res.output_sha256,
                "settings": res.settings,
                "timing": {"task_ms": res.task_ms, "load_s": round(editor.load_s, 3)},
                "runtime": editor.runtime(),
            },
            sort_keys=True,
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
