"""qualkit contract double: stands for TensorRT's Python module, not TensorRT. The
double's image has no TensorRT; the build the adapter probes for is played by qualkit's
Go binary."""

from qualkit_double import refuse_if_missing

refuse_if_missing("tensorrt")

QUALKIT_CONTRACT_DOUBLE = True
__version__ = "11.1.0.106"
