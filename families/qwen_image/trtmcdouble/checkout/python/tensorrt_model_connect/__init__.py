"""qualkit contract double: stands for TRTMC's tensorrt_model_connect package in the
double's checkouts (python/ at e9132e79, core/builder/ in the families layout), not
TRTMC's code. The probe finds it under /src, as the adapter requires of the checkout's
own package; `build` hands the request to qualkit's binary, which writes a bundle of the
double's (no engine is built)."""

import dataclasses
import json
import os
import tempfile

from qualkit_double import refuse_if_missing, run

refuse_if_missing("tensorrt_model_connect")

QUALKIT_CONTRACT_DOUBLE = True
__version__ = "0.1.0"


@dataclasses.dataclass(frozen=True)
class BuildRequest:
    """The fields the families case passes (test_e2e.py @ f0a1b69f § _build)."""

    model_dir: os.PathLike
    output_path: os.PathLike
    family: str
    task: str
    precision: str
    max_sequence_length: int | None = None
    image_height: int | None = None
    image_width: int | None = None
    video_num_frames: int | None = None
    max_batch_size: int = 1
    tensor_parallel_size: int = 1
    quantization: str | None = None
    fp32_layers: tuple = ()


def build(request):
    """Builds the bundle the request names (the double's: a header, no engines)."""
    fields = {k: (str(v) if isinstance(v, os.PathLike) else v) for k, v in dataclasses.asdict(request).items()}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(fields, f)
    try:
        run("tensorrt-model-connect", "build-request", f.name)
    finally:
        os.unlink(f.name)
