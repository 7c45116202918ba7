"""qualkit contract double: stands for Hugging Face transformers, not transformers.

The checkpoint's text encoder and processor come from transformers when the correctness
case's HF reference loads the pipeline; qualkit's probe requires it in the HF python.
Nothing of it is called here (the double's diffusers loads no model).
"""

from qualkit_double import refuse_if_missing

refuse_if_missing("transformers")

QUALKIT_CONTRACT_DOUBLE = True
__version__ = "0.0.0+qualkit.contract.double"
