"""A stand-in for the refedit binary, for the selftest only: `version` and `run`.

It edits with the reference in float32 (what a correct Go program looks like to the
correctness case) or, with REFEDIT_FAKE_MISTAKE=<name>, with one deliberate mistake, so the
selftest can run the real e2e case against a right and a wrong program without Go.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import reference  # noqa: E402

MISTAKES = {
    "sepia-0.05": {"sepia": ((0.443, 0.769, 0.189), (0.349, 0.686, 0.168), (0.272, 0.534, 0.131))},
    "gamma-0.6": {"gamma": 0.6},
    "warm-1.10": {"warm": (1.10, 1.0, 0.80)},
}


def main(argv: list[str]) -> int:
    if argv[:1] == ["version"]:
        print("fake-refedit 0 (selftest)")
        return 0
    if argv[:1] != ["run"]:
        print("usage: fake_refedit.py run BUNDLE ... | version", file=sys.stderr)
        return 2
    p = argparse.ArgumentParser(prog="fake_refedit.py run")
    p.add_argument("bundle")
    p.add_argument("--image", required=True)
    p.add_argument("--prompt", required=True)
    p.add_argument("--size")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--num-inference-steps", type=int, default=4)
    p.add_argument("--guidance-scale", type=float, default=1.0)
    p.add_argument("--output", required=True)
    a = p.parse_args(argv[1:])

    found = reference.match_edits(a.prompt)
    if len(found) != 1:
        print(f"instruction matches {found or 'no edit'}; edits: {', '.join(reference.EDITS)}", file=sys.stderr)
        return 2
    constants = dataclasses.replace(reference.DEFAULT, **MISTAKES.get(os.environ.get("REFEDIT_FAKE_MISTAKE", ""), {}))
    pixels = reference.decode(a.image)
    size = tuple(int(v) for v in a.size.split("x")) if a.size else (pixels.shape[1], pixels.shape[0])
    result = reference.edit_pixels(
        pixels,
        a.prompt,
        size=size,
        num_inference_steps=a.num_inference_steps,
        guidance_scale=a.guidance_scale,
        seed=a.seed,
        constants=constants,
        dtype=np.float32,
    )
    Image.fromarray(result.output).save(a.output, format="PNG")
    settings = {
        "edit": result.edit,
        "width": size[0],
        "height": size[1],
        "num_inference_steps": a.num_inference_steps,
        "guidance_scale": a.guidance_scale,
        "seed": a.seed,
        "precision": "fp32",
    }
    sha = lambda path: hashlib.sha256(Path(path).read_bytes()).hexdigest()  # noqa: E731
    print(json.dumps({
        "backend": "refedit",
        "bundle_sha256": sha(a.bundle),
        "image": a.image,
        "input_sha256": sha(a.image),
        "output": a.output,
        "output_sha256": sha(a.output),
        "settings": settings,
        "timing": {"task_ms": 0.0},
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
