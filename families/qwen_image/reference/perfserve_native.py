"""The native Task of TRTMC's perf-serve reference backend: the backend its server runs, minus HTTP.

    python perfserve_native.py BUNDLE --checkout DIR --profile P --batch ITEMS.jsonl --report REPORT.jsonl
        --scratch DIR [--wait-items SECONDS] [--precision fp32] [--deterministic] [--device cuda]
    python perfserve_native.py BUNDLE --checkout DIR --profile P --item ITEM_JSON --output OUT.png --scratch DIR ...

`trtmc_perf_serving serve --backend reference --reference-model BUNDLE` answers each task
request with TRTMC's ReferenceBackend (backends/reference/__init__.py @ 7b798a32; its
Diffusion adapter, backends/reference/media.py @ ca938e40). This program loads that same
backend from the checkout's apps/perf_serving, once, with the spec cli.py @ 3878755c §
serve gives it, and does for each item what the server's execute does for a request
(app.py @ 3878755c § task, § execute), with TRTMC's own functions:

- the request: the profile's base request under the item's fields, which are the fields
  qualkit's wire protocol wrote into the HTTP body (internal/wire/task.go taskFields: the
  item's canonical settings mapped back to the worker's request schema), the image inline as
  {"$file": ...} and materialised into <scratch>/<id>/inputs (files.py @ c94a23d3);
- latent replay: latent_seed turned into initial_latents_path by latents.Replay on the
  bundle's own configs (latents.py @ d3e1a549), as cli.py builds it for --reference-model;
- the call: backend.invoke(resolved, <scratch>/<id>/output), which writes output.npy.

The PNG is that float32 array quantised as perf-serve's media digest quantises an image
(digests.py @ 7d4725ab § _to_uint8, called from the checkout), the rule the harness reads
the server's output.npy with (internal/wire/npy.go): the identity stage compares pixels.

The report's first line is {"load_ms", "runtime"} (+ waited_ms, items_read_at with
--wait-items), then one line per item {"id", "output", "output_sha256", "array_sha256",
"initial_latents_sha256", "task_ms"}; task_ms is the backend's own Task-call wall, the
server's timing.model_call_ms. Exit codes: 0 done, 1 the work failed, 2 a command line to fix.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import hashlib
import io
import json
import os
import sys
import time
from pathlib import Path

# The canonical settings qualkit's wire protocol sends (internal/wire/task.go taskFields),
# and the worker request field each travels as; size travels as width and height.
TASK_FIELDS = {
    "seed": "seed",
    "num_inference_steps": "num_steps",
    "guidance_scale": "guidance_scale",
    "true_cfg_scale": "cfg_scale",
    "negative_prompt": "negative_prompt",
}


class ItemError(ValueError):
    pass


def use_checkout(checkout: Path) -> None:
    """perf-serve's import path (README @ 8bd797ae § Serve): apps/perf_serving, apps/benchmark."""
    for sub in ("apps/benchmark", "apps/perf_serving"):
        path = str(checkout / sub)
        if not (checkout / sub).is_dir():
            raise ItemError(f"{checkout} has no {sub}: give a TRTMC checkout (or perf-serve snapshot) with perf-serve")
        if path not in sys.path:
            sys.path.insert(0, path)


def image_suffix(data: bytes) -> str:
    """The suffix wire.Task writes into the $file reference (imageSuffix)."""
    if data.startswith(b"\x89PNG"):
        return ".png"
    if data.startswith(b"\xff\xd8"):
        return ".jpg"
    return ".bin"


def task_request(item: dict) -> dict:
    """The item as the body's "request" object: what the server got over HTTP."""
    image = Path(item["image"]).read_bytes()
    req = {"prompt": item["prompt"], "image_path": {"$file": {"suffix": image_suffix(image), "b64": base64.b64encode(image).decode()}}}
    for key, value in (item.get("settings") or {}).items():
        if key == "size":
            width, _, height = value.partition("x")
            req["width"], req["height"] = int(width), int(height)
        elif key in TASK_FIELDS:
            field = TASK_FIELDS[key]
            req[field] = value if field == "negative_prompt" else json.loads(value)
        else:
            raise ItemError(f"setting {key!r} has no field in perf-serve's generate_image request")
    if item.get("latent_seed") is not None:
        req["latent_seed"] = int(item["latent_seed"])
    return req


class Native:
    """TRTMC's reference backend, loaded once, and the server's per-request steps."""

    def __init__(self, args):
        checkout = Path(args.checkout)
        use_checkout(checkout)
        # A checkout staged from TRTMC's perf-serve snapshot carries qualkit's shim for its
        # one code gap (qualkit_gaps.py, as the server's __main__ does); a real one does not.
        self.gaps = None
        if (checkout / "apps/perf_serving/trtmc_perf_serving/qualkit_gaps.py").is_file():
            from trtmc_perf_serving import qualkit_gaps

            self.gaps = "qualkit shim (not TRTMC code): ResolvedCase.selected_task " + ("added (types.py gap)" if qualkit_gaps.ADDED else "present")
            print(f"perfserve_native.py: {self.gaps}", file=sys.stderr, flush=True)
        from trtmc_perf_serving import digests, files, latents
        from trtmc_perf_serving.backends.reference import ReferenceBackend
        from trtmc_perf_serving.backends.reference.common import ReferenceSpec
        from trtmc_perf_serving.profiles import resolve_profile

        self.files, self.digests = files, digests
        profile = resolve_profile(args.profile, manifest_root=Path(args.checkout) / "families", testcase=None,
                                  operation=None, selected_task=None, bundle=None, runtime_root=None, overrides={})
        self.base_request = dict(profile.base_request)
        spec = ReferenceSpec(operation=profile.operation, model=args.bundle, revision=None, precision=args.precision,
                             mode="eager", deterministic=args.deterministic, device=args.device)
        start = time.perf_counter()
        self.backend = ReferenceBackend(spec)
        self.load_s = time.perf_counter() - start
        self.replay = latents.Replay(lambda: latents.read_checkpoint(latents.snapshot(args.bundle, None)))
        self.scratch = Path(args.scratch)
        self.describe = dict(self.backend.describe())

    def run(self, item: dict) -> dict:
        workdir = self.scratch / item["id"]
        workdir.mkdir(parents=True, exist_ok=True)
        resolved = self.files.materialize_files({**self.base_request, **task_request(item)}, workdir / "inputs")
        latents_sha = None
        if "latent_seed" in resolved:
            resolved, replayed = self.replay(resolved, workdir / "inputs")
            if not replayed:
                raise ItemError(f"item {item['id']}: latent_seed {item['latent_seed']} was not replayed: the bundle's pipeline has no latent layout")
            latents_sha = hashlib.sha256(Path(resolved["initial_latents_path"]).read_bytes()).hexdigest()
        invocation = self.backend.invoke(resolved, workdir / "output")
        import numpy as np

        array = np.load(invocation.observation["artifact"])
        frames = np.asarray(array)
        if frames.ndim != 4 or frames.shape[0] != 1 or frames.shape[-1] != 3:
            raise ItemError(f"item {item['id']}: the backend's output is {frames.shape}, want [1, H, W, 3]")
        pixels = self.digests._to_uint8(frames[0])
        from PIL import Image

        buf = io.BytesIO()
        Image.fromarray(pixels, mode="RGB").save(buf, format="PNG")
        png = buf.getvalue()
        Path(item["output"]).write_bytes(png)
        return {"id": item["id"], "output": item["output"], "output_sha256": hashlib.sha256(png).hexdigest(),
                "array_sha256": invocation.observation.get("sha256"), "initial_latents_sha256": latents_sha,
                "task_ms": round(float(invocation.model_call_ms), 3)}


def runtime(native: Native) -> dict:
    import torch

    return {"backend": native.describe, "snapshot_shim": native.gaps, "torch": torch.__version__, "cuda": torch.version.cuda,
            "device_name": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
            "load_ms": round(native.load_s * 1000, 3)}


def batch(args, native: Native) -> int:
    def read_items():
        return [json.loads(line) for line in Path(args.batch).read_text().splitlines() if line.strip()]

    head = {"load_ms": round(native.load_s * 1000, 3), "runtime": runtime(native)}
    if args.wait_items > 0:
        # Preloaded beside the server: the harness writes ITEMS whole (by rename) once the
        # server has stopped.
        print(f"perfserve_native.py: loaded in {native.load_s:.1f} s; waiting up to {args.wait_items:.0f} s for {args.batch}", flush=True)
        t0 = time.monotonic()
        while not os.path.exists(args.batch):
            if time.monotonic() - t0 > args.wait_items:
                raise OSError(f"--wait-items: {args.batch} did not appear within {args.wait_items:.0f} s")
            time.sleep(0.02)
        head["waited_ms"] = round((time.monotonic() - t0) * 1000, 3)
        head["items_read_at"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")
    items = read_items()
    with open(args.report, "w") as rep:
        rep.write(json.dumps(head) + "\n")
        for n, item in enumerate(items, 1):
            line = native.run(item)
            rep.write(json.dumps(line, sort_keys=True) + "\n")
            rep.flush()
            print(f"perfserve_native.py: batch {n}/{len(items)} {item['id']}: {line['output_sha256'][:12]} ({line['task_ms']:.1f} ms)", flush=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="perfserve_native.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("bundle", help="the --reference-model folder the server serves")
    ap.add_argument("--checkout", required=True, help="the TRTMC checkout (or perf-serve snapshot) whose apps/perf_serving the server runs")
    ap.add_argument("--profile", required=True, help="the server's --profile")
    ap.add_argument("--scratch", required=True, help="the per-request folders (inputs, output.npy), as the server's --scratch")
    ap.add_argument("--precision", choices=("fp16", "bf16", "fp32"), required=True, help="the server's --precision")
    ap.add_argument("--deterministic", action="store_true", help="as the server's --deterministic")
    ap.add_argument("--device", default="cuda", help="the ReferenceSpec device (perf-serve's is cuda; cpu only when given)")
    ap.add_argument("--batch", help="ITEMS.jsonl: every item after one load")
    ap.add_argument("--report", help="with --batch: REPORT.jsonl")
    ap.add_argument("--wait-items", type=float, default=0, help="with --batch: load first, then wait up to SECONDS for ITEMS")
    ap.add_argument("--item", help="one item as JSON (id, image, prompt, settings, latent_seed)")
    ap.add_argument("--output", help="with --item: the PNG to write")
    args = ap.parse_args(argv)
    if bool(args.batch) == bool(args.item) or bool(args.batch) != bool(args.report) or bool(args.item) != bool(args.output):
        ap.error("give --batch ITEMS --report REPORT, or --item JSON --output PNG")
    try:
        native = Native(args)
        if args.batch:
            return batch(args, native)
        item = {**json.loads(args.item), "output": args.output}
        line = native.run(item)
        print(json.dumps({**line, "runtime": runtime(native)}, sort_keys=True), flush=True)
        return 0
    except (ItemError, OSError, ValueError, KeyError) as e:
        print(f"perfserve_native.py: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
