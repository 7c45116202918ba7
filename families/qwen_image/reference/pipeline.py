"""The diffusers reference backend of the qwen_image family: QwenImageEditPlusPipeline.

One module owns everything the server (server.py), the native Task (native.py) and the
correctness case (test_parity.py) share, so the three run the same code path:

- the bundle: a small JSON that names what to load (`python pipeline.py bundle ...`), or,
  with --save-pipeline, a folder: that JSON as bundle.json beside the smoke pipeline saved
  in diffusers' own layout (save_pretrained), which any DiffusionPipeline.from_pretrained
  loads (TRTMC's perf-serve reference backend serves it as its --reference-model);
- loading: a local checkpoint snapshot at the pinned revision (bf16 on a GPU), or the smoke
  profile, tiny random weights built in code from a fixed construction seed (nothing is
  ever downloaded);
- the device rule: CUDA, or a failure; the CPU only when asked for with --device cpu;
- settings: parsing and limits, shared by the HTTP fields and the native flags;
- the edit: deterministic settings, initial latents drawn from the request's seed as TRTMC
  draws them (NumPy's default_rng(seed).standard_normal in the pipeline's unpacked latent
  shape, float32: TRTMC's perf-serve latents.py @ d3e1a549 § noise, and its families case,
  test_e2e.py @ 9777fef7 § _initial_latents), the pipeline call, and the PNG quantization
  floor(clamp(v, 0, 1) * 255 + 0.5).

A smoke bundle exercises the real pipeline (the reference image is VAE-encoded and its
latents condition the DiT next to the noise latents; the text encoder sees it too), but its
output is noise: it proves the code path, never the checkpoint's quality.
"""

from __future__ import annotations

import os

# cuBLAS picks its reduction order by workspace; a fixed workspace makes identical requests
# give identical pixels. It must be set before CUDA starts, so before torch is imported.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import argparse
import copy
import hashlib
import io
import json
import math
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

BUNDLE_FORMAT = "qualkit-diffusers-bundle"
BUNDLE_VERSION = 1
PIPELINE_CLASS = "QwenImageEditPlusPipeline"
# The diffusers release this backend is written and tested against (scripts/h200/wheels.sh
# carries it). QwenImageEditPlusPipeline and the transformer's zero_cond_t (2511) are in it.
DIFFUSERS_VERSION = "0.40.0"
HF_ID = "Qwen/Qwen-Image-Edit-2511"
REVISION = "6f3ccc0b56e431dc6a0c2b2039706d7d26f22cb9"

PRECISIONS = ("bf16", "fp32")
# The smoke profile is served in float32. With random weights, bfloat16 rounding moves the
# output as much as mirroring the reference image does (CPU, fixture settings: bf16 vs fp32
# PSNR 46.7 dB, mirrored vs not 46.5 dB), so in bf16 neither the parity case nor the
# influence proof could tell a right pipeline from one that lost the reference image.
# In float32 rounding moves it 0.00002 levels (float32 vs float64: 96 dB).
SMOKE_PRECISION = "fp32"

# The smoke profile: a Qwen-Image-Edit-2511-shaped pipeline with tiny random weights.
# Shapes follow diffusers' own QwenImage tests and ../shared/probes/qwen_tiny_probe.py
# (which ran on the H200); `init` is what this profile adds on top of PyTorch's default
# initialisation (see _apply_smoke_init). Changing any value changes config_sha256, so
# the harness's bundle cache key and the bundle itself change with it.
SMOKE_CONSTRUCTION_SEED = 0
SMOKE_CONFIG = {
    "transformer": {
        "patch_size": 2,
        "in_channels": 16,
        "out_channels": 4,
        "num_layers": 2,
        "attention_head_dim": 16,
        "num_attention_heads": 3,
        "joint_attention_dim": 16,
        "guidance_embeds": False,
        "axes_dims_rope": [8, 4, 4],
        "zero_cond_t": True,
    },
    "vae": {
        "base_dim": 24,
        "z_dim": 4,
        "dim_mult": [1, 2, 4, 4],
        "num_res_blocks": 1,
        "temperal_downsample": [False, True, True],
        "latents_mean": [0.09, -0.17, 0.3, -0.13],
        "latents_std": [0.14, 0.27, 0.17, 0.15],
    },
    "text_encoder": {
        "text_config": {
            "hidden_size": 16,
            "intermediate_size": 16,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
            "rope_scaling": {"mrope_section": [1, 1, 2], "rope_type": "default", "type": "default"},
            "rope_theta": 1000000.0,
            "vocab_size": 300,
        },
        "vision_config": {"depth": 2, "hidden_size": 16, "intermediate_size": 16, "num_heads": 2, "out_hidden_size": 16},
        "hidden_size": 16,
        "vocab_size": 300,
    },
    # A byte-level BPE with no merges: every UTF-8 byte is one token, plus Qwen's specials.
    "tokenizer": {
        "kind": "byte-level-bpe-no-merges",
        "specials": [
            "<|endoftext|>",
            "<|im_start|>",
            "<|im_end|>",
            "<|vision_start|>",
            "<|vision_end|>",
            "<|vision_pad|>",
            "<|image_pad|>",
            "<|video_pad|>",
        ],
    },
    "scheduler": {"class": "FlowMatchEulerDiscreteScheduler"},
    "init": {"reinit_seed": 1, "lecun_normal": ["vae", "transformer"], "attention_logit_gain": 16.0},
    "defaults": {"width": 512, "height": 512, "num_inference_steps": 8, "true_cfg_scale": 4.0, "negative_prompt": " ", "seed": 0},
}

# Defaults of a checkpoint bundle: the model card's and TRTMC's workload (1024x1024, true CFG 4).
CHECKPOINT_DEFAULTS = {"width": 1024, "height": 1024, "num_inference_steps": 20, "true_cfg_scale": 4.0, "negative_prompt": " ", "seed": 0}

LIMITS = {
    "max_side": 2048,
    "size_multiple": 16,  # vae_scale_factor (8) x the DiT's 2x2 patches
    "max_num_inference_steps": 100,
    "min_true_cfg_scale": 1.0,
    "max_true_cfg_scale": 20.0,
    "max_input_pixels": 4096 * 4096,
    "max_prompt_chars": 4096,
}


class BundleError(Exception):
    """The bundle is unreadable, of another format, or does not match what was loaded."""


class DeviceError(Exception):
    """The requested device is not usable (no CUDA, and --device cpu was not given)."""


class SettingError(ValueError):
    """A setting (HTTP field or native flag) is invalid; param names the field."""

    def __init__(self, param: str, message: str):
        super().__init__(f"{param}: {message}")
        self.param = param


def canonical_json(v) -> bytes:
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def sha256_bytes(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def smoke_config_sha256() -> str:
    return sha256_bytes(canonical_json({"construction_seed": SMOKE_CONSTRUCTION_SEED, "config": SMOKE_CONFIG}))


# ----------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class Settings:
    width: int
    height: int
    num_inference_steps: int
    true_cfg_scale: float
    negative_prompt: str
    seed: int


# The settings a request may carry, as HTTP fields and (with dashes) native flags.
SETTING_FIELDS = ("size", "seed", "num_inference_steps", "true_cfg_scale", "negative_prompt")


def _parse_int(param: str, raw: str, lo: int, hi: int) -> int:
    s = raw.strip()
    # Clients that hold every extra input as a number send "8.0": accept a zero fraction.
    whole, dot, frac = s.partition(".")
    if not whole.isdigit() or (dot and frac.strip("0") != "") or (dot and not frac.isdigit()):
        raise SettingError(param, f"want an integer in {lo}..{hi}, got {raw!r}")
    v = int(whole)
    if not lo <= v <= hi:
        raise SettingError(param, f"want an integer in {lo}..{hi}, got {raw!r}")
    return v


def _parse_float(param: str, raw: str, lo: float, hi: float) -> float:
    try:
        v = float(raw.strip())
    except ValueError:
        raise SettingError(param, f"want a number in [{lo}, {hi}], got {raw!r}") from None
    if not math.isfinite(v) or not lo <= v <= hi:
        raise SettingError(param, f"want a number in [{lo}, {hi}], got {raw!r}")
    return v


def parse_size(raw: str) -> tuple[int, int]:
    s = raw.strip().lower()
    w, x, h = s.partition("x")
    m, top = LIMITS["size_multiple"], LIMITS["max_side"]
    if not x or not w.isdigit() or not h.isdigit():
        raise SettingError("size", f"want WxH, got {raw!r}")
    wi, hi = int(w), int(h)
    if not (m <= wi <= top and m <= hi <= top) or wi % m or hi % m:
        raise SettingError("size", f"want WxH with each side a multiple of {m} in {m}..{top}, got {raw!r}")
    return wi, hi


def parse_settings(fields: dict[str, str], defaults: dict) -> Settings:
    """Settings from request fields (strings, as on the wire); absent ones take the bundle's
    defaults. A field that is present but empty is an error, except negative_prompt, whose
    empty string is a real prompt (the pipeline then still runs true CFG)."""
    unknown = sorted(set(fields) - set(SETTING_FIELDS))
    if unknown:
        raise SettingError(unknown[0], f"unknown setting (known: {', '.join(SETTING_FIELDS)})")
    for k, v in fields.items():
        if k != "negative_prompt" and v.strip() == "":
            raise SettingError(k, "present but empty")
    width, height = defaults["width"], defaults["height"]
    if "size" in fields:
        width, height = parse_size(fields["size"])
    steps = defaults["num_inference_steps"]
    if "num_inference_steps" in fields:
        steps = _parse_int("num_inference_steps", fields["num_inference_steps"], 1, LIMITS["max_num_inference_steps"])
    cfg = float(defaults["true_cfg_scale"])
    if "true_cfg_scale" in fields:
        cfg = _parse_float("true_cfg_scale", fields["true_cfg_scale"], LIMITS["min_true_cfg_scale"], LIMITS["max_true_cfg_scale"])
    seed = defaults["seed"]
    if "seed" in fields:
        seed = _parse_int("seed", fields["seed"], 0, 2**63 - 1)
    neg = fields.get("negative_prompt", defaults["negative_prompt"])
    if len(neg) > LIMITS["max_prompt_chars"]:
        raise SettingError("negative_prompt", f"longer than {LIMITS['max_prompt_chars']} characters")
    return Settings(width=width, height=height, num_inference_steps=steps, true_cfg_scale=cfg, negative_prompt=neg, seed=seed)


def check_prompt(prompt: str) -> None:
    if prompt.strip() == "":
        raise SettingError("prompt", "required and non-empty")
    if len(prompt) > LIMITS["max_prompt_chars"]:
        raise SettingError("prompt", f"longer than {LIMITS['max_prompt_chars']} characters")


# ----------------------------------------------------------------------------- bundle


# A saved-pipeline bundle is a folder: this file beside the pipeline's own.
BUNDLE_FILE = "bundle.json"


def read_bundle(path: str | Path) -> dict:
    """The bundle's JSON. For a folder (--save-pipeline), its bundle.json, with "dir" set to
    the folder, from which Editor loads the saved pipeline."""
    folder = Path(path) if Path(path).is_dir() else None
    try:
        b = json.loads((folder / BUNDLE_FILE if folder else Path(path)).read_text())
    except (OSError, ValueError) as e:
        raise BundleError(f"bundle {path}: {e}") from e
    if not isinstance(b, dict) or b.get("format") != BUNDLE_FORMAT or b.get("version") != BUNDLE_VERSION:
        raise BundleError(f"bundle {path}: want format {BUNDLE_FORMAT!r} version {BUNDLE_VERSION}")
    if b.get("profile") not in ("smoke", "checkpoint") or b.get("precision") not in PRECISIONS:
        raise BundleError(f"bundle {path}: profile must be smoke or checkpoint and precision one of {PRECISIONS}")
    if b["profile"] == "smoke" and b["smoke"].get("config_sha256") != smoke_config_sha256():
        raise BundleError(
            f"bundle {path}: smoke config_sha256 {b['smoke'].get('config_sha256')} is not this code's "
            f"{smoke_config_sha256()}: rebuild the bundle"
        )
    if folder is not None:
        if not b.get("saved_pipeline") or not (folder / "model_index.json").is_file():
            raise BundleError(f"bundle {path}: a folder bundle holds bundle.json with saved_pipeline and the pipeline's model_index.json")
        b["dir"] = str(folder)
    elif b.get("saved_pipeline"):
        raise BundleError(f"bundle {path}: its pipeline was saved beside it: give the folder, not its {BUNDLE_FILE}")
    return b


def bundle_sha256(path: Path) -> str:
    """The bundle's sha256: the file's, or for a folder the sha256 of its sorted
    "<sha256>  <relative path>" lines (sha256sum's format), one per file."""
    path = Path(path)
    if not path.is_dir():
        return file_sha256(path)
    lines = [f"{file_sha256(p)}  {p.relative_to(path).as_posix()}\n" for p in sorted(path.rglob("*")) if p.is_file()]
    return sha256_bytes("".join(lines).encode())


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def snapshot_manifest(snapshot: Path) -> list[dict]:
    """The snapshot's files without reading 57 GB: in a Hugging Face cache each file links
    to a blob named by its content hash (sha256 for LFS files, git sha1 for small ones), so
    the blob names identify the contents. Plain files (a copied snapshot) are hashed."""
    files = []
    for p in sorted(snapshot.rglob("*")):
        if p.is_dir():
            continue
        rel = p.relative_to(snapshot).as_posix()
        entry = {"path": rel, "bytes": p.stat().st_size}
        if p.is_symlink():
            entry["blob"] = Path(os.readlink(p)).name
        else:
            entry["sha256"] = file_sha256(p)
        files.append(entry)
    return files


def revision_of(snapshot: Path) -> str | None:
    """The revision a Hugging Face cache snapshot directory is named by (.../snapshots/<rev>)."""
    return snapshot.name if snapshot.parent.name == "snapshots" else None


def make_bundle(args) -> tuple[dict, dict | None]:
    """The bundle's JSON, and for the smoke profile the pipeline's parts it names."""
    import diffusers
    import torch
    import transformers

    versions = {"diffusers": diffusers.__version__, "torch": torch.__version__, "transformers": transformers.__version__}
    if args.smoke:
        config_sha = smoke_config_sha256()
        parts = build_smoke()
        if smoke_config_sha256() != config_sha:
            raise BundleError("building the smoke pipeline changed SMOKE_CONFIG: a component edits its config in place")
        bundle = {
            "format": BUNDLE_FORMAT,
            "version": BUNDLE_VERSION,
            "pipeline": PIPELINE_CLASS,
            "model": HF_ID,
            "profile": "smoke",
            "smoke_label": "SMOKE: tiny random weights built in code; proves the code path, never the checkpoint",
            "precision": args.precision,
            "defaults": SMOKE_CONFIG["defaults"],
            "smoke": {
                "construction_seed": SMOKE_CONSTRUCTION_SEED,
                "config": SMOKE_CONFIG,
                "config_sha256": smoke_config_sha256(),
                "weights_sha256": weights_sha256(parts),
                "parameters": sum(p.numel() for m in parts.values() if hasattr(m, "parameters") for p in m.parameters()),
            },
            "built_with": versions,
        }
    else:
        parts = None
        snap = Path(args.checkpoint).resolve()
        if not (snap / "model_index.json").is_file():
            raise BundleError(f"{snap} holds no model_index.json: give the snapshot directory of {HF_ID}")
        rev = args.revision or revision_of(snap)
        if rev != REVISION:
            raise BundleError(f"checkpoint revision {rev!r}, the pin is {REVISION}: use the snapshot at the pinned revision")
        bundle = {
            "format": BUNDLE_FORMAT,
            "version": BUNDLE_VERSION,
            "pipeline": PIPELINE_CLASS,
            "model": HF_ID,
            "profile": "checkpoint",
            "precision": args.precision,
            "defaults": CHECKPOINT_DEFAULTS,
            "checkpoint": {"snapshot": str(snap), "revision": rev, "files": snapshot_manifest(snap)},
            "built_with": versions,
        }
    bundle["limits"] = LIMITS
    return bundle, parts


def save_pipeline(bundle: dict, parts: dict, out: Path) -> None:
    """The folder bundle: the smoke pipeline in diffusers' layout (safetensors), and the
    bundle's JSON beside it as bundle.json, saved_pipeline naming every file with its sha256."""
    from diffusers import QwenImageEditPlusPipeline

    if out.exists():
        raise BundleError(f"{out} exists: a folder bundle is written into a new folder")
    QwenImageEditPlusPipeline(**parts).save_pretrained(str(out), safe_serialization=True)
    files = [{"path": p.relative_to(out).as_posix(), "sha256": file_sha256(p)} for p in sorted(out.rglob("*")) if p.is_file()]
    bundle["saved_pipeline"] = {"layout": "diffusers save_pretrained", "class": PIPELINE_CLASS, "files": files}
    (out / BUNDLE_FILE).write_text(json.dumps(bundle, indent=2, sort_keys=True) + "\n")


# ----------------------------------------------------------------------------- smoke construction


def build_smoke_tokenizer():
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alpha = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alpha)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = SMOKE_CONFIG["tokenizer"]["specials"]
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    fast.image_token = "<|image_pad|>"
    fast.video_token = "<|video_pad|>"
    fast.vision_start_token = "<|vision_start|>"
    fast.vision_end_token = "<|vision_end|>"
    return fast


def build_smoke() -> dict:
    """The smoke pipeline's components, on the CPU in float32, from the fixed construction
    seed. PyTorch's default initialisers draw from the global generator in construction
    order, so the same torch release gives the same weights on every machine
    (weights_sha256 in the bundle checks that at load)."""
    import torch
    from diffusers import AutoencoderKLQwenImage, FlowMatchEulerDiscreteScheduler, QwenImageTransformer2DModel
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration, Qwen2VLImageProcessor, Qwen2VLProcessor

    tokenizer = build_smoke_tokenizer()
    ids = {s: tokenizer.convert_tokens_to_ids(s) for s in SMOKE_CONFIG["tokenizer"]["specials"]}
    try:
        from transformers import Qwen2VLVideoProcessor

        video = Qwen2VLVideoProcessor()
    except ImportError as e:  # transformers' video processor needs torchvision
        raise RuntimeError(f"Qwen2VLProcessor needs a video processor, which needs torchvision: {e}") from e
    processor = Qwen2VLProcessor(image_processor=Qwen2VLImageProcessor(), tokenizer=tokenizer, video_processor=video)

    # transformers' configs edit nested dicts (rope_scaling) in place: hand them copies.
    te = copy.deepcopy(SMOKE_CONFIG["text_encoder"])
    cfg = Qwen2_5_VLConfig(
        text_config=te["text_config"],
        vision_config=te["vision_config"],
        hidden_size=te["hidden_size"],
        vocab_size=te["vocab_size"],
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    # Qwen's real ids are out of this vocabulary; the tiny tokenizer's are the ones used.
    for c in (cfg, getattr(cfg, "text_config", None)):
        if c is not None:
            c.bos_token_id, c.eos_token_id, c.pad_token_id = ids["<|endoftext|>"], ids["<|endoftext|>"], ids["<|endoftext|>"]
    with _fork_rng():
        torch.manual_seed(SMOKE_CONSTRUCTION_SEED)
        text_encoder = Qwen2_5_VLForConditionalGeneration(cfg)
        t = copy.deepcopy(SMOKE_CONFIG["transformer"])
        t["axes_dims_rope"] = tuple(t["axes_dims_rope"])
        transformer = QwenImageTransformer2DModel(**t)
        vae = AutoencoderKLQwenImage(**copy.deepcopy(SMOKE_CONFIG["vae"]))
    parts = {
        "transformer": transformer,
        "vae": vae,
        "text_encoder": text_encoder,
        "tokenizer": tokenizer,
        "processor": processor,
        "scheduler": FlowMatchEulerDiscreteScheduler(),
    }
    _apply_smoke_init(parts)
    for m in (text_encoder, transformer, vae):
        m.eval()
    return parts


class _fork_rng:
    """Construction draws from a private copy of the CPU generator's state, so building a
    smoke pipeline leaves the process's global generator as it was."""

    def __enter__(self):
        import torch

        self._state = torch.random.get_rng_state()

    def __exit__(self, *exc):
        import torch

        torch.random.set_rng_state(self._state)


def _apply_smoke_init(parts: dict) -> None:
    """What the smoke profile changes after PyTorch's default initialisation, so that the
    reference image visibly reaches the output (measured on the CPU in float32 at the
    fixture settings, 512x512, 8 steps, true CFG 4).

    PyTorch's default (Kaiming-uniform, a=sqrt(5)) shrinks the signal about threefold per
    layer, so the deep random VAE maps every input to nearly the same output: its decoder
    turned two unrelated latents into images 2.8 levels apart, and a different reference
    image moved the edit by about 0.01 levels. Redrawing each conv and linear weight of the
    VAE and the DiT from N(0, 1/fan_in) ("LeCun normal", variance-preserving) keeps the
    inputs visible (two random latents then decode ~33 levels apart; a 1% change of a
    latent moves the image ~0.2 levels: smooth, not chaotic). The VAE's latents_mean/std
    are that VAE's latent statistics over the five image_edit fixtures, as the real VAE's
    constants are its own, so the reference latents enter the DiT at unit scale.
    attention_logit_gain scales the DiT's query/key RMSNorm gains, so attention logits grow
    16-fold and attention becomes position-selective: without it a random DiT averages the
    reference tokens, and a mirrored reference (the same tokens in another order) changed
    the output by 0.04 levels; with it, by 0.88 (max 8), against 0.00002 for float32
    rounding (float32 vs float64)."""
    import torch

    init = SMOKE_CONFIG["init"]
    g = torch.Generator("cpu").manual_seed(init["reinit_seed"])
    with torch.no_grad():
        for comp in init["lecun_normal"]:
            for _, mod in parts[comp].named_modules():
                if isinstance(mod, (torch.nn.Linear, torch.nn.Conv2d, torch.nn.Conv3d)):
                    fan_in = mod.weight[0].numel()
                    mod.weight.copy_(torch.randn(mod.weight.shape, generator=g) / math.sqrt(fan_in))
        gain = init["attention_logit_gain"]
        if gain != 1.0:
            for name, mod in parts["transformer"].named_modules():
                if name.rsplit(".", 1)[-1] in ("norm_q", "norm_k", "norm_added_q", "norm_added_k") and getattr(mod, "weight", None) is not None:
                    mod.weight.mul_(math.sqrt(gain))


def weights_sha256(parts: dict) -> str:
    """sha256 over every parameter and buffer of the three networks, by name, dtype and shape."""
    import torch

    h = hashlib.sha256()
    for comp in ("text_encoder", "transformer", "vae"):
        sd = parts[comp].state_dict()
        for k in sorted(sd):
            t = sd[k].detach().to("cpu").contiguous()
            h.update(f"{comp}.{k}:{t.dtype}:{tuple(t.shape)}\n".encode())
            h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


# ----------------------------------------------------------------------------- device and loading


def resolve_device(requested: str | None) -> str:
    """cuda unless --device cpu is given explicitly; never a silent fallback to the CPU."""
    import torch

    dev = requested or "cuda"
    if dev == "cpu":
        return dev
    if dev != "cuda" and not dev.startswith("cuda:"):
        raise DeviceError(f"device {dev!r}: choose cuda, cuda:N or cpu")
    if not torch.cuda.is_available():
        raise DeviceError(
            f"device {dev} requested but CUDA is not available (torch {torch.__version__}, "
            f"built for CUDA {torch.version.cuda}); run on a GPU host, or pass --device cpu explicitly"
        )
    return dev


def set_deterministic() -> list[str]:
    """Settings that make identical requests give identical pixels. warn_only: an op without
    a deterministic kernel warns (and the warning is logged) instead of failing the run;
    the harness's identity and influence stages then catch any difference."""
    import torch

    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    return [
        "torch.use_deterministic_algorithms(True, warn_only=True)",
        "CUBLAS_WORKSPACE_CONFIG=" + os.environ.get("CUBLAS_WORKSPACE_CONFIG", ""),
        "cudnn.benchmark=False",
        "cudnn.deterministic=True",
        "tf32=off",
    ]


def torch_dtype(precision: str):
    import torch

    return {"bf16": torch.bfloat16, "fp32": torch.float32}[precision]


@dataclass
class EditResult:
    png: bytes
    pixels: object  # numpy uint8 H x W x 3
    settings: dict
    task_ms: float
    input_sha256: str
    output_sha256: str


class Editor:
    """A loaded pipeline and the one edit code path of the server, the native Task and the
    correctness case."""

    def __init__(self, bundle: dict, device: str | None = None, precision: str | None = None, log=None):
        import torch
        import diffusers

        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.bundle = bundle
        self.device = resolve_device(device)
        self.precision = precision or bundle["precision"]
        if self.precision not in PRECISIONS:
            raise BundleError(f"precision {self.precision!r}: choose one of {PRECISIONS}")
        self.deterministic = set_deterministic()
        self.smoke = bundle["profile"] == "smoke"
        if diffusers.__version__ != DIFFUSERS_VERSION:
            self.log(f"warning: diffusers {diffusers.__version__}, this backend is pinned to {DIFFUSERS_VERSION}")
        self.nondeterministic_ops: list[str] = []
        start = time.perf_counter()
        dtype = torch_dtype(self.precision)
        if self.smoke and bundle.get("dir"):
            from diffusers import QwenImageEditPlusPipeline

            # Loaded in float32, as saved, so the weights hash as built; then cast.
            pipe = QwenImageEditPlusPipeline.from_pretrained(bundle["dir"], torch_dtype=torch.float32, local_files_only=True)
            got = weights_sha256(pipe.components)
            if got != bundle["smoke"]["weights_sha256"]:
                raise BundleError(f"the saved pipeline's weights_sha256 {got} differs from its bundle.json's {bundle['smoke']['weights_sha256']}")
            pipe = pipe.to(self.device, dtype)
        elif self.smoke:
            parts = build_smoke()
            got = weights_sha256(parts)
            if got != bundle["smoke"]["weights_sha256"]:
                raise BundleError(
                    f"smoke weights_sha256 {got} differs from the bundle's {bundle['smoke']['weights_sha256']} "
                    f"(built with {bundle.get('built_with')}, loaded with torch {torch.__version__}): rebuild the bundle here"
                )
            from diffusers import QwenImageEditPlusPipeline

            pipe = QwenImageEditPlusPipeline(**parts)
            pipe = pipe.to(self.device, dtype)
        else:
            from diffusers import QwenImageEditPlusPipeline

            snap = bundle["checkpoint"]["snapshot"]
            pipe = QwenImageEditPlusPipeline.from_pretrained(snap, torch_dtype=dtype, local_files_only=True)
            pipe = pipe.to(self.device)
        pipe.set_progress_bar_config(disable=True)
        self.pipe = pipe
        self.load_s = time.perf_counter() - start
        self.defaults = bundle["defaults"]
        self.log(
            f"loaded {bundle['profile']} {PIPELINE_CLASS} ({bundle['model']}) on {self.device_name()} "
            f"{self.precision} in {self.load_s:.1f} s; diffusers {diffusers.__version__}, torch {torch.__version__}"
            + ("; SMOKE: random weights, not the checkpoint" if self.smoke else "")
        )

    def device_name(self) -> str:
        import torch

        if self.device.startswith("cuda"):
            dev = torch.device(self.device)
            # The GPU's UUID as the process sees it: in a container, the one the runtime
            # gave it (the row leases GPUs by UUID; the evidence can hold the two together).
            uuid = getattr(torch.cuda.get_device_properties(dev), "uuid", None)
            gpu = f", GPU-{uuid}" if uuid is not None else ""
            return f"{self.device} ({torch.cuda.get_device_name(dev)}{gpu})"
        return "cpu"

    def runtime(self) -> dict:
        import diffusers
        import torch
        import transformers

        return {
            "device": self.device,
            "device_name": self.device_name(),
            "precision": self.precision,
            "deterministic": self.deterministic,
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "diffusers": diffusers.__version__,
            "transformers": transformers.__version__,
            "load_s": round(self.load_s, 3),
        }

    def effective(self, s: Settings) -> dict:
        d = asdict(s)
        d.update(precision=self.precision, device=self.device, profile=self.bundle["profile"], smoke=self.smoke)
        return d

    def latent_shape(self, s: Settings) -> tuple[int, ...]:
        """The unpacked latent shape TRTMC replays noise in for this pipeline (latents.py @
        d3e1a549 § _qwen_image): (1, 1, in_channels / 4, 2 (H / 16), 2 (W / 16)) with the VAE's
        2 ** len(temperal_downsample) = 8."""
        pipe = self.pipe
        scale = 2 ** len(pipe.vae.config.temperal_downsample)
        return (1, 1, pipe.transformer.config.in_channels // 4, 2 * (s.height // (scale * 2)), 2 * (s.width // (scale * 2)))

    def noise(self, s: Settings):
        """The unpacked initial noise, float32, as TRTMC draws it from the seed: NumPy's
        default_rng(seed).standard_normal(shape, dtype=float32) (latents.py @ d3e1a549 §
        noise; test_e2e.py @ 9777fef7 § _initial_latents draws the same values), so the same
        seed gives the same noise on any device and in TRTMC's own latent replay."""
        import numpy as np

        return np.random.default_rng(int(s.seed)).standard_normal(self.latent_shape(s), dtype=np.float32)

    def initial_latents(self, s: Settings, noise=None):
        """The packed initial latents (the pipeline takes them packed, as TRTMC's reference
        adapter packs a replayed noise file: media.py @ ca938e40 § _replayed_latents); the
        pipeline casts them to its dtype."""
        import torch

        n = self.noise(s) if noise is None else noise
        _, _, channels, h, w = n.shape
        return self.pipe._pack_latents(torch.from_numpy(n), 1, channels, h, w)

    def edit_pixels(self, image, prompt: str, s: Settings, latents=None):
        """The pipeline call: returns the float32 RGB output in [0, 1], H x W x 3 (numpy)."""
        import torch

        if latents is None:
            latents = self.initial_latents(s)
        torch.manual_seed(s.seed)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with torch.inference_mode():
                out = self.pipe(
                    image=[image],
                    prompt=prompt,
                    negative_prompt=s.negative_prompt,
                    true_cfg_scale=s.true_cfg_scale,
                    height=s.height,
                    width=s.width,
                    num_inference_steps=s.num_inference_steps,
                    latents=latents,
                    output_type="pt",
                ).images
        for w in caught:
            msg = str(w.message)
            if "deterministic" in msg and msg not in self.nondeterministic_ops:
                self.nondeterministic_ops.append(msg)
                self.log(f"warning: nondeterministic op: {msg}")
        return out[0].float().clamp(0, 1).permute(1, 2, 0).cpu().numpy()

    def edit(self, image_bytes: bytes, prompt: str, s: Settings) -> EditResult:
        """Decode, edit, quantize and encode one request; task_ms covers all four."""
        import torch

        start = time.perf_counter()
        image = decode_image(image_bytes)
        v = self.edit_pixels(image, prompt, s)
        pixels = quantize(v)
        png = encode_png(pixels)
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()
        task_ms = (time.perf_counter() - start) * 1000
        return EditResult(
            png=png,
            pixels=pixels,
            settings=self.effective(s),
            task_ms=round(task_ms, 3),
            input_sha256=sha256_bytes(image_bytes),
            output_sha256=sha256_bytes(png),
        )


# ----------------------------------------------------------------------------- images


class ImageError(ValueError):
    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def decode_image(data: bytes):
    """PNG, JPEG or WebP to RGB (alpha dropped, never composited). The header is checked
    against the pixel limit before any pixel is decoded."""
    from PIL import Image

    try:
        img = Image.open(io.BytesIO(data), formats=["PNG", "JPEG", "WEBP"])
    except Exception as e:
        raise ImageError(f"image: not a PNG, JPEG or WebP file ({e})") from e
    w, h = img.size
    if w * h > LIMITS["max_input_pixels"]:
        raise ImageError(f"image: {w}x{h} is over the limit of {LIMITS['max_input_pixels']} pixels", status=413)
    try:
        img.load()
    except Exception as e:
        raise ImageError(f"image: cannot decode ({e})") from e
    return img.convert("RGB")


def quantize(v):
    """floor(clamp(v, 0, 1) * 255 + 0.5), the same rule as TRTMC's PNG output."""
    import numpy as np

    v = np.clip(v.astype(np.float32), 0.0, 1.0)
    return np.floor(v * np.float32(255.0) + np.float32(0.5)).astype(np.uint8)


def encode_png(pixels) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(pixels, mode="RGB").save(buf, format="PNG", compress_level=6)
    return buf.getvalue()


# ----------------------------------------------------------------------------- CLI


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="pipeline.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bundle", help="write the bundle JSON that names what the server loads")
    src = b.add_mutually_exclusive_group(required=True)
    src.add_argument("--smoke", action="store_true", help="tiny random weights built in code (smoke, never qualification)")
    src.add_argument("--checkpoint", metavar="DIR", help=f"a local snapshot of {HF_ID} at revision {REVISION}")
    b.add_argument("--revision", help="the snapshot's revision (default: its directory name in a Hugging Face cache)")
    b.add_argument(
        "--precision",
        choices=PRECISIONS,
        help="default: bf16 for a checkpoint (its serving dtype), fp32 for the smoke profile (see SMOKE_PRECISION)",
    )
    b.add_argument("-o", "--out", required=True)
    b.add_argument(
        "--save-pipeline",
        action="store_true",
        help="smoke only: OUT is a new folder holding the pipeline saved in diffusers' layout and bundle.json "
        "(what DiffusionPipeline.from_pretrained, and TRTMC's perf-serve reference backend, load)",
    )
    sub.add_parser("smoke-config-sha256", help="print the smoke construction's config hash")
    args = ap.parse_args(argv)
    if args.cmd == "smoke-config-sha256":
        print(smoke_config_sha256())
        return 0
    if args.precision is None:
        args.precision = SMOKE_PRECISION if args.smoke else "bf16"
    if args.save_pipeline and not args.smoke:
        print("pipeline.py bundle: --save-pipeline saves the smoke pipeline; a checkpoint snapshot is a pipeline folder already", file=sys.stderr)
        return 2
    try:
        bundle, parts = make_bundle(args)
        if args.save_pipeline:
            save_pipeline(bundle, parts, Path(args.out))
            print(f"{bundle_sha256(Path(args.out))}  {args.out}/")
            return 0
    except BundleError as e:
        print(f"pipeline.py bundle: {e}", file=sys.stderr)
        return 1
    data = json.dumps(bundle, indent=2, sort_keys=True) + "\n"
    Path(args.out).write_text(data)
    print(f"{sha256_bytes(data.encode())}  {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
