"""qualkit contract double: stands for PyTorch, not PyTorch.

PyPI's torch is the multi-GB CUDA build and this image has no GPU, so what the double's
checkouts import of torch is answered here: the version, a CUDA runtime that says one
device is there (the double's own programs play the GPU work), its capability and name.
perf-serve's platform.fingerprint() and host_details() read these (platform.py @
ca938e40), so its /v1/serving/info platform block is this stand-in's, and says so.
"""

from qualkit_double import refuse_if_missing

refuse_if_missing("torch")

QUALKIT_CONTRACT_DOUBLE = True
__version__ = "0.0.0+qualkit.contract.double"
float16, bfloat16, float32 = "float16", "bfloat16", "float32"


class version:
    cuda = "qualkit-contract-double"


class backends:
    class cudnn:
        @staticmethod
        def version():
            return None


class cuda:
    @staticmethod
    def is_available():
        return True

    @staticmethod
    def device_count():
        return 1

    @staticmethod
    def get_device_capability(index=0):
        return (9, 0)

    @staticmethod
    def get_device_name(index=0):
        return "qualkit contract double (no GPU)"
