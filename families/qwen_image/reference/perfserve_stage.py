"""Stage the perf-serve a row serves: what `python -m trtmc_perf_serving serve` needs of a TRTMC checkout.

    python perfserve_stage.py --source DIR --shim SHIM_DIR --out DEST

DIR is a TRTMC checkout with apps/perf_serving, or a snapshot of TRTMC's perf-serve (the
stored copies assembled in ../shared/trtmc-perf-serve: DIR or DIR/snapshot). DEST gets
apps/perf_serving, apps/benchmark and families/qwen_image (the catalog's manifest and test
photo), copied file by file, so the server, the native Task and the evidence name one tree
that nothing edits while the row runs. A snapshot has no trtmc_perf_serving/__main__.py
(not among the stored files) and one code gap (qualkit_gaps.py says which): the shim's
files go into the package, named as qualkit's, never TRTMC's. A checkout that has
__main__.py gets no shim.

Prints one JSON line: source, whether the shim was added, and every staged file with its sha256.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

TREES = ("apps/perf_serving", "apps/benchmark", "families/qwen_image")
PACKAGE = "apps/perf_serving/trtmc_perf_serving"
SNAPSHOT_FILES = ("LICENSE", "NOTICE", "MANIFEST.txt")


def source_root(given: Path) -> Path:
    for root in (given / "snapshot", given):
        if (root / PACKAGE / "app.py").is_file():
            return root
    raise SystemExit(f"perfserve_stage.py: {given} holds no TRTMC perf-serve ({PACKAGE}/app.py, in it or in snapshot/)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="perfserve_stage.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", required=True, type=Path)
    ap.add_argument("--shim", required=True, type=Path, help="qualkit's perf-serve shim folder (__main__.py, qualkit_gaps.py)")
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    src = source_root(args.source.resolve())
    if args.out.exists():
        shutil.rmtree(args.out)
    for tree in TREES:
        if not (src / tree).is_dir():
            print(f"perfserve_stage.py: {src} has no {tree}", file=sys.stderr)
            return 1
        shutil.copytree(src / tree, args.out / tree, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shim = not (src / PACKAGE / "__main__.py").is_file()
    if shim:
        for name in ("__main__.py", "qualkit_gaps.py"):
            shutil.copy2(args.shim / name, args.out / PACKAGE / name)
        for name in SNAPSHOT_FILES:
            if (src / name).is_file():
                (args.out / "TRTMC-SNAPSHOT").mkdir(exist_ok=True)
                shutil.copy2(src / name, args.out / "TRTMC-SNAPSHOT" / name)
    files = {p.relative_to(args.out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(args.out.rglob("*")) if p.is_file()}
    print(json.dumps({"source": str(src), "qualkit_shim": shim, "files": files}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
