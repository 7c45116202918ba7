"""qualkit contract double: stands for ftfy, which TRTMC's Qwen-Image preflight requires
in the HF python (MODEL.toml @ e9132e79). Nothing of it is called here."""

from qualkit_double import refuse_if_missing

refuse_if_missing("ftfy")

QUALKIT_CONTRACT_DOUBLE = True
__version__ = "6.3.1"
