"""qualkit's shim, not TRTMC code: the __main__.py of TRTMC's own trtmc_perf_serving when a
double's checkout carries it from TRTMC_PERF_SERVE (the stored copies of
NVIDIA/TensorRT-Model-Connect assembled in ../shared/trtmc-perf-serve, whose
snapshot/MANIFEST.txt names each file's commit). It closes the two gaps of those copies
without editing a TRTMC file:

1. trtmc_perf_serving/__main__.py is not among the stored files, so this file is it: it
   runs trtmc_perf_serving.cli.main, which is what `python -m trtmc_perf_serving` runs
   (TRTMC's own apps/aiperf_qual services.py @ a9ed5f69 starts `-m trtmc_perf_serving`).
2. No stored apps/benchmark/trtmc_benchmark/types.py has ResolvedCase.selected_task,
   which catalog.py @ 0dd9052f passes; qualkit_gaps.py adds that one optional field.

3. `serve` is handed to qualkit's recorder (the double's binary, trtmcdouble/record.go),
   which starts TRTMC's server again through this file (QUALKIT_PERF_SERVE_UPSTREAM set, so
   TRTMC's cli.main runs), passes every request through unchanged and logs each exchange
   under the scratch folder: the replay of the double's perf-serve row is made from it.
   Only inside the double (its qualkit_double module importable): the perf-serve reference
   row, on a GPU host, runs TRTMC's server directly.

Its first line on stderr (the row's serve/server.log) says what it did and which code runs.
"""

import importlib.util
import os
import sys

if (sys.argv[1:2] == ["serve"] and not {"-h", "--help"} & set(sys.argv) and not os.environ.get("QUALKIT_PERF_SERVE_UPSTREAM")
        and importlib.util.find_spec("qualkit_double")):
    from qualkit_double import become

    become("perf-serve-recorder", [sys.executable, *sys.argv[1:]])

from trtmc_perf_serving import qualkit_gaps  # first: catalog.py binds ResolvedCase when imported

import uvicorn  # noqa: E402

from trtmc_perf_serving import cli  # noqa: E402

print(f"qualkit shim (not TRTMC code): running TRTMC's trtmc_perf_serving.cli.main from {cli.__file__} "
      f"with uvicorn {uvicorn.__version__}; ResolvedCase.selected_task "
      f"{'added (types.py gap)' if qualkit_gaps.ADDED else 'present'}", file=sys.stderr, flush=True)

raise SystemExit(cli.main())
