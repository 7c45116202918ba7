"""qualkit contract double: stands for Hugging Face diffusers, not diffusers.

The correctness case's reference is the HF diffusers pipeline on the checkpoint; the
double's image has neither the model nor a GPU. DiffusionPipeline here loads the
(double's) snapshot folder and, called, runs qualkit's binary as `diffusers-reference`:
the double's edit of the same inputs, every channel's lowest bit flipped, so that the
case's parity check compares two close images that are not the same bytes.
"""

import os
import tempfile
import types

from qualkit_double import refuse_if_missing, run

refuse_if_missing("diffusers")

QUALKIT_CONTRACT_DOUBLE = True
__version__ = "0.40.0"


class DiffusionPipeline:
    def __init__(self, model_dir):
        self.model_dir = model_dir

    @classmethod
    def from_pretrained(cls, model_dir, torch_dtype=None, local_files_only=False, **kwargs):
        index = os.path.join(str(model_dir), "model_index.json")
        if not os.path.isfile(index):
            raise OSError(f"{model_dir} has no model_index.json (qualkit contract double)")
        return cls(str(model_dir))

    def to(self, device):
        return self

    def __call__(self, prompt, height, width, num_inference_steps, latents=None, image=None,
                 negative_prompt=None, guidance_scale=None, true_cfg_scale=None, **kwargs):
        from PIL import Image
        import numpy as np

        with tempfile.TemporaryDirectory(prefix="qualkit-reference-") as tmp:
            args = ["--prompt", prompt, "--height", height, "--width", width, "--steps", num_inference_steps,
                    "--output", os.path.join(tmp, "reference.png")]
            if image is not None:
                image.save(os.path.join(tmp, "image.png"))
                args += ["--image", os.path.join(tmp, "image.png")]
            if latents is not None:
                np.ascontiguousarray(latents, dtype=np.float32).tofile(os.path.join(tmp, "latents.raw"))
                args += ["--latents", os.path.join(tmp, "latents.raw")]
            if negative_prompt is not None:
                args += ["--negative-prompt", negative_prompt]
            if true_cfg_scale is not None:
                args += ["--true-cfg-scale", true_cfg_scale]
            if guidance_scale is not None:
                args += ["--guidance-scale", guidance_scale]
            run("diffusers-reference", *args)
            out = Image.open(os.path.join(tmp, "reference.png")).convert("RGB")
            out.load()
        return types.SimpleNamespace(images=[out], frames=None)
