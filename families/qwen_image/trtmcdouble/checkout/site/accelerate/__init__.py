"""qualkit contract double: stands for Hugging Face accelerate, which TRTMC's
families/qwen_image/requirements.txt (@ 89bc7139) installs beside diffusers for the HF
reference; qualkit's probe requires it in the HF python. Nothing of it is called here."""

from qualkit_double import refuse_if_missing

refuse_if_missing("accelerate")

QUALKIT_CONTRACT_DOUBLE = True
__version__ = "0.0.0+qualkit.contract.double"
