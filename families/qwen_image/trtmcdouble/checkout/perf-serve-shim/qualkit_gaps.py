"""qualkit's shim, not TRTMC code: closes the one code gap of the stored copies of
NVIDIA/TensorRT-Model-Connect assembled as TRTMC's perf-serve snapshot (its MANIFEST.txt
names each file's commit), without editing a TRTMC file. It is copied beside TRTMC's
trtmc_perf_serving only where a checkout is built from that snapshot; a real checkout has
no gap and no shim.

No stored apps/benchmark/trtmc_benchmark/types.py has ResolvedCase.selected_task, which
catalog.py @ 0dd9052f passes: importing this module adds that one optional field, and
ADDED says whether it had to.
"""

import dataclasses

import trtmc_benchmark.types as _types

ADDED = "selected_task" not in {f.name for f in dataclasses.fields(_types.ResolvedCase)}
if ADDED:
    @dataclasses.dataclass(frozen=True)
    class ResolvedCase(_types.ResolvedCase):
        selected_task: "str | None" = None

    ResolvedCase.__module__ = _types.__name__
    _types.ResolvedCase = ResolvedCase
