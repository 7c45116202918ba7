"""Requires-Dist closure of the wheels carried to the H200 (stdlib + packaging only).

Every requirement (markers evaluated for CPython 3.12 on Linux x86_64) of every carried
wheel must be met by a wheel carried in the same group, by a package the H200 already
has, or be one of OMITTED below, each with the reason it is not carried.

Two modes:
  closure.py check-list GROUP_DIR H200_LIST      on the development machine: H200_LIST
      is the package names of KINDS.md's "Python packages already there" (one a line,
      optionally NAME==VERSION where a version was read there); versions of the H200's
      packages are checked only where known.
  closure.py check-installed GROUP_DIR SITE       on the H200, after installing GROUP_DIR
      into SITE: every requirement against what SITE + the interpreter's own
      site-packages really hold, versions included.
Exit 1 when a requirement is met by nothing (and is not OMITTED); a version mismatch
with a package the H200 has is printed as WARN (it may work; the run shows).
"""

from __future__ import annotations

import re
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

try:
    from packaging.markers import default_environment
    from packaging.requirements import Requirement
    from packaging.version import Version
except ImportError:  # pip vendors packaging
    from pip._vendor.packaging.markers import default_environment
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.version import Version

# Declared by a carried wheel, deliberately not carried. For aiperf 0.13.0 the set of
# distributions `aiperf profile --endpoint-type image_edit ... --ui none` really imports
# was read off a run (a sitecustomize that records sys.modules in every aiperf process,
# forked workers included, 2026-12-02): none of these is among them.
OMITTED = {
    "dash": "aiperf's plot dashboard (`aiperf plot`), never imported by `aiperf profile`",
    "dash-bootstrap-components": "plot dashboard only",
    "plotly": "plot dashboard and static plots only (9.9 MB)",
    "kaleido": "static plot export only",
    "seaborn": "plots only (and present on the H200)",
    "datasets": "public-dataset loaders (ShareGPT etc.); the harness sends a custom single_turn file",
    "optuna": "parameter sweeps only (pulls SQLAlchemy, alembic, Mako)",
    "kopf": "Kubernetes operator mode only",
    "kubernetes-asyncio": "Kubernetes mode only",
    "fastapi": "aiperf's optional API service, not started by `aiperf profile`",
    "starlette-compress": "aiperf's optional API service only",
    "uvicorn": "aiperf's optional API service only (pulls httptools, watchfiles, websockets)",
    "python-multipart": "aiperf's optional API service only",
    "aiosqlite": "not imported by `aiperf profile`",
    "soundfile": "audio datasets only",
    "textual": "the dashboard UI; the harness runs --ui none",
    "zstandard": "read only for .zst exports in the multi-run orchestrator; httpx imports it optionally (5.5 MB)",
    "importlib-metadata": "diffusers imports the backport only on Python < 3.8; on 3.12 it uses the stdlib, and a carried backport would shadow the stdlib for every package that prefers it when present",
}

ENV = dict(default_environment())
ENV.update(
    python_version="3.12",
    python_full_version="3.12.3",
    implementation_name="cpython",
    platform_python_implementation="CPython",
    sys_platform="linux",
    platform_system="Linux",
    platform_machine="x86_64",
    os_name="posix",
)


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_meta(path: Path) -> tuple[str, str, list[Requirement]]:
    with zipfile.ZipFile(path) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        msg = Parser().parsestr(z.read(name).decode())
    reqs = []
    for line in msg.get_all("Requires-Dist") or []:
        r = Requirement(line)
        if r.marker is not None and not r.marker.evaluate(dict(ENV, extra="")):
            continue
        reqs.append(r)
    return norm(msg["Name"]), msg["Version"], reqs


def carried(group: Path) -> dict[str, tuple[str, list[Requirement], str]]:
    out = {}
    for w in sorted(group.glob("*.whl")):
        name, ver, reqs = wheel_meta(w)
        if name in out:
            sys.exit(f"closure: two wheels of {name} in {group}: keep one version")
        out[name] = (ver, reqs, w.name)
    if not out:
        sys.exit(f"closure: no wheels in {group}")
    return out


def check(group: Path, available: dict[str, str | None], where: str) -> int:
    wheels = carried(group)
    errors = warns = 0
    for name, (ver, reqs, fname) in wheels.items():
        for r in reqs:
            dep = norm(r.name)
            if dep in wheels:
                have, src = wheels[dep][0], "carried"
            elif dep in available:
                have, src = available[dep], where
            elif dep in OMITTED:
                print(f"  omitted  {name} -> {r}: {OMITTED[dep]}")
                continue
            else:
                print(f"  MISSING  {name} -> {r}: neither carried nor on {where}")
                errors += 1
                continue
            if have is None:
                print(f"  ok?      {name} -> {r}: on {where}, version not known here")
            elif r.specifier and not r.specifier.contains(Version(have), prereleases=True):
                level = "MISSING" if src == "carried" else "WARN"
                print(f"  {level:8} {name} -> {r}: {src} has {have}")
                errors += level == "MISSING"
                warns += level == "WARN"
            else:
                print(f"  ok       {name} -> {r}: {src} {have}")
    total = sum(p.stat().st_size for p in group.glob("*.whl"))
    print(f"closure {group}: {len(wheels)} wheels, {total / 2**20:.1f} MiB; {errors} unmet, {warns} version warnings")
    return 1 if errors else 0


def read_list(path: Path) -> dict[str, str | None]:
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, ver = line.partition("==")
            out[norm(name)] = ver or None
    return out


def installed(site: Path) -> dict[str, str | None]:
    import importlib.metadata as md

    out: dict[str, str | None] = {}
    for d in md.distributions(path=[str(site)] + sys.path):
        n = d.metadata["Name"]
        if n and norm(n) not in out:  # the first on the path wins, as at import
            out[norm(n)] = d.version
    return out


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "check-list":
        return check(Path(argv[1]), read_list(Path(argv[2])), "the H200 (KINDS.md list)")
    if len(argv) == 3 and argv[0] == "check-installed":
        avail = installed(Path(argv[2]))
        return check(Path(argv[1]), avail, "this host")
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
