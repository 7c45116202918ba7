"""qualkit contract double: `python3 -m trtmc_perf_serving ARGS` runs qualkit's Go imitation of
trtmc-perf-serve with the same arguments."""

import sys

from qualkit_double import become

become("trtmc-perf-serve", sys.argv[1:])
