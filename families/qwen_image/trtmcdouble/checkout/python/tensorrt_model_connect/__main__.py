"""qualkit contract double: `python3 -m tensorrt_model_connect.__main__ build HF_ID -o
BUNDLE ...`, TRTMC's Python builder CLI at e9132e79 (build_cli.py), is played by
qualkit's binary with the same arguments."""

import sys

from qualkit_double import become

become("tensorrt-model-connect", sys.argv[1:])
