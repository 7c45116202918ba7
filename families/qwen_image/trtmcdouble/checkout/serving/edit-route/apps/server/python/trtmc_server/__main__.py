"""qualkit contract double: `python3 -m trtmc_server ARGS` runs qualkit's Go control plane of
trtmc-server with the same arguments."""

import sys

from qualkit_double import become

become("trtmc-server-control-plane", sys.argv[1:])
