"""The native Task of the diffusers reference backend: one edit, the server's code path minus HTTP.

    python native.py BUNDLE --image IN --prompt=P [--size=WxH] [--seed=S]
        [--num-inference-steps=N] [--true-cfg-scale=G] [--negative-prompt=TEXT]
        --output OUT.png [--device cuda|cuda:N|cpu]
    python native.py BUNDLE --batch ITEMS.jsonl --report REPORT.jsonl [--wait-items SECONDS] [--device ...]

--batch loads the pipeline once, then runs every item (one JSON object per line: id,
image, prompt, settings as the HTTP fields, output) through exactly the one-edit path;
the report's first line is {"load_ms"}, then one line per item {"id", "output",
"output_sha256", "task_ms", "settings"}.

Settings left out take the bundle's defaults, exactly as absent HTTP fields do (the same
pipeline.parse_settings). Give values as --flag=VALUE: a prompt may start with "-".
Prints one JSON line: {"backend", "bundle_sha256", "image", "input_sha256", "output",
"output_sha256", "settings", "timing": {"task_ms", "load_s"}}; task_ms is the same measure as
the server's (pipeline.Editor.edit). Exit codes: 0 done, 1 the work failed (bundle, device,
image, pipeline), 2 a command line to fix (missing flag, invalid setting).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
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
    ap.add_argument("--image")
    ap.add_argument("--prompt")
    ap.add_argument("--output")
    ap.add_argument("--batch", help="ITEMS.jsonl: every edit after one load")
    ap.add_argument("--report", help="with --batch: REPORT.jsonl")
    ap.add_argument("--wait-items", type=float, default=0, help="with --batch: load the pipeline first, then wait up to SECONDS "
                    "for ITEMS to appear (a preloaded batch); the report's first line adds waited_ms and items_read_at")
    ap.add_argument("--device", default="cuda", help="cuda (default), cuda:N, or cpu (only when given explicitly)")
    for field, flag in FLAGS.items():
        ap.add_argument(flag, dest=field, default=None)
    args = ap.parse_args(argv)
    if args.batch or args.report:
        one = [f for f in ("image", "prompt", "output", *FLAGS) if getattr(args, f) is not None]
        if not (args.batch and args.report) or one:
            ap.error("--batch ITEMS and --report REPORT go together, without the one-edit flags")
        return batch(args)
    missing = [f"--{f}" for f in ("image", "prompt", "output") if getattr(args, f) is None]
    if missing:
        ap.error("the following arguments are required: " + ", ".join(missing))
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
                "bundle_sha256": pipeline.bundle_sha256(Path(args.bundle)),
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


def batch(args) -> int:
    """Every item of --batch after one load, each through the one-edit path."""
    def read_items():
        return [json.loads(line) for line in Path(args.batch).read_text().splitlines() if line.strip()]

    try:
        items = None if args.wait_items > 0 else read_items()
        bundle = pipeline.read_bundle(args.bundle)
        editor = pipeline.Editor(bundle, device=args.device)
        head = {"load_ms": round(editor.load_s * 1000, 3), "runtime": editor.runtime()}
        if items is None:
            # Preloaded beside the server: the harness writes ITEMS whole (by rename) once
            # the server has stopped.
            print(f"native.py: batch loaded in {editor.load_s:.1f} s; waiting up to {args.wait_items:.0f} s for {args.batch}", flush=True)
            t0 = time.monotonic()
            while not os.path.exists(args.batch):
                if time.monotonic() - t0 > args.wait_items:
                    raise OSError(f"--wait-items: {args.batch} did not appear within {args.wait_items:.0f} s")
                time.sleep(0.02)
            items = read_items()
            head["waited_ms"] = round((time.monotonic() - t0) * 1000, 3)
            head["items_read_at"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")
    except (OSError, ValueError, pipeline.DeviceError, pipeline.BundleError) as e:
        print(f"native.py: {e}", file=sys.stderr)
        return 1
    with open(args.report, "w") as rep:
        rep.write(json.dumps(head) + "\n")
        for n, it in enumerate(items, 1):
            try:
                pipeline.check_prompt(it["prompt"])
                settings = pipeline.parse_settings(dict(it.get("settings") or {}), bundle["defaults"])
                res = editor.edit(Path(it["image"]).read_bytes(), it["prompt"], settings)
            except (KeyError, OSError, pipeline.SettingError, pipeline.ImageError, pipeline.DeviceError) as e:
                print(f"native.py: batch item {n} ({it.get('id')}): {e}", file=sys.stderr)
                return 1
            Path(it["output"]).write_bytes(res.png)
            rep.write(json.dumps({"id": it["id"], "output": it["output"], "output_sha256": res.output_sha256,
                                  "task_ms": res.task_ms, "settings": res.settings}, sort_keys=True) + "\n")
            rep.flush()
            print(f"native.py: batch {n}/{len(items)} {it['id']}: {res.output_sha256[:12]} ({res.task_ms:.1f} ms)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
