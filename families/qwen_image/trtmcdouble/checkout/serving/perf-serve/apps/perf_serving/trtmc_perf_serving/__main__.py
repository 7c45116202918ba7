"""qualkit contract double: `python3 -m trtmc_perf_serving ARGS` replays what TRTMC's own
perf-serve answered the double's perf-serve row (qualkit's binary, trtmcdouble/replay.go,
from the exchanges recorded in trtmcdouble/testdata/perfserve)."""

import sys

from qualkit_double import become

become("trtmc-perf-serve", sys.argv[1:])
