"""qualkit contract double: stands for torchvision, not torchvision.

The correctness case's HF reference loads Qwen-Image-Edit-2511's Qwen2VLProcessor
through transformers, whose Qwen2-VL image processor imports torchvision (transformers
5.25.0, models/qwen2_vl/image_processing_qwen2_vl.py); qualkit's probe requires it in
the HF python. Nothing of it is called here (the double's diffusers loads no processor).
"""

from qualkit_double import refuse_if_missing

refuse_if_missing("torchvision")

QUALKIT_CONTRACT_DOUBLE = True
__version__ = "0.0.0+qualkit.contract.double"
