"""The smoke profile on the CPU: construction, bundle binding, the device rule, and that the
real code path runs (the reference image is VAE-encoded and conditions the DiT)."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image

import pipeline
from conftest import tiny_settings

PROMPT = "Turn the image into a watercolor illustration."


def mirrored(png: bytes) -> bytes:
    buf = io.BytesIO()
    Image.open(io.BytesIO(png)).transpose(Image.FLIP_LEFT_RIGHT).save(buf, format="PNG")
    return buf.getvalue()


def test_bundle_is_reproducible_and_labelled_smoke(bundle_path, tmp_path):
    again = tmp_path / "again.bundle"
    assert pipeline.main(["bundle", "--smoke", "-o", str(again)]) == 0
    assert again.read_bytes() == bundle_path.read_bytes()
    b = pipeline.read_bundle(bundle_path)
    assert b["profile"] == "smoke" and "SMOKE" in b["smoke_label"] and b["precision"] == pipeline.SMOKE_PRECISION == "fp32"
    assert b["smoke"]["construction_seed"] == pipeline.SMOKE_CONSTRUCTION_SEED
    assert b["smoke"]["config"]["transformer"]["zero_cond_t"] is True
    assert b["smoke"]["config_sha256"] == pipeline.smoke_config_sha256()


def test_construction_leaves_the_global_generator_alone():
    import torch

    torch.manual_seed(123)
    want = torch.rand(3)
    torch.manual_seed(123)
    pipeline.build_smoke()
    assert torch.equal(torch.rand(3), want)


def test_tampered_weights_hash_is_refused(bundle_path, tmp_path):
    b = json.loads(bundle_path.read_text())
    b["smoke"]["weights_sha256"] = "0" * 64
    with pytest.raises(pipeline.BundleError, match="weights_sha256"):
        pipeline.Editor(b, device="cpu")


def test_changed_config_is_refused(bundle_path, tmp_path):
    b = json.loads(bundle_path.read_text())
    b["smoke"]["config_sha256"] = "f" * 64
    p = tmp_path / "x.bundle"
    p.write_text(json.dumps(b))
    with pytest.raises(pipeline.BundleError, match="config_sha256"):
        pipeline.read_bundle(p)


def test_no_silent_cpu_fallback(monkeypatch, bundle_path):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(pipeline.DeviceError, match="--device cpu"):
        pipeline.resolve_device(None)
    with pytest.raises(pipeline.DeviceError):
        pipeline.resolve_device("cuda:0")
    with pytest.raises(pipeline.DeviceError):
        pipeline.resolve_device("mps")
    assert pipeline.resolve_device("cpu") == "cpu"


def test_checkpoint_bundle_needs_the_pinned_revision(tmp_path):
    snap = tmp_path / "models--Qwen--Qwen-Image-Edit-2511" / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    (snap / "model_index.json").write_text("{}")
    with pytest.raises(pipeline.BundleError, match="pin"):
        pipeline.make_bundle(pipeline.argparse.Namespace(smoke=False, checkpoint=str(snap), revision=None, precision="bf16"))
    pinned = snap.parent / pipeline.REVISION
    snap.rename(pinned)
    blob = tmp_path / "blobs" / ("a" * 64)
    blob.parent.mkdir()
    blob.write_bytes(b"weights")
    (pinned / "transformer").mkdir()
    (pinned / "transformer" / "w.safetensors").symlink_to(blob)
    b, _ = pipeline.make_bundle(pipeline.argparse.Namespace(smoke=False, checkpoint=str(pinned), revision=None, precision="bf16"))
    assert b["profile"] == "checkpoint" and b["checkpoint"]["revision"] == pipeline.REVISION
    files = {f["path"]: f for f in b["checkpoint"]["files"]}
    assert files["transformer/w.safetensors"]["blob"] == "a" * 64 and "sha256" in files["model_index.json"]


def test_reference_image_goes_through_the_vae_and_into_the_dit(editor, photo):
    """The pipeline path the smoke profile exists for: the VAE encodes the ~1 MP reference,
    and the DiT sees its latents after the noise latents (zero_cond_t: timestep 0 for them)."""
    pipe = editor.pipe
    seen = {}
    enc = pipe.vae.encode

    def spy_encode(x, *a, **k):
        seen["vae_input"] = tuple(x.shape)
        return enc(x, *a, **k)

    def spy_dit(module, args, kwargs):
        seen.setdefault("dit_tokens", kwargs["hidden_states"].shape[1])
        seen.setdefault("img_shapes", kwargs["img_shapes"])

    pipe.vae.encode = spy_encode
    h = pipe.transformer.register_forward_pre_hook(spy_dit, with_kwargs=True)
    try:
        editor.edit(photo, PROMPT, tiny_settings())
    finally:
        pipe.vae.encode = enc
        h.remove()
    assert seen["vae_input"] == (1, 3, 1, 800, 1312)  # 640x382 resized to ~1024x1024 area
    noise_tokens = (64 // 16) * (64 // 16)
    cond_tokens = (800 // 16) * (1312 // 16)
    assert seen["dit_tokens"] == noise_tokens + cond_tokens
    assert seen["img_shapes"] == [[(1, 4, 4), (1, 50, 82)]]
    assert pipe.transformer.config.zero_cond_t is True


def test_same_request_same_pixels_and_mirror_changes_them(editor, photo):
    s = tiny_settings(size="128x128", num_inference_steps="2")
    a = editor.edit(photo, PROMPT, s)
    b = editor.edit(photo, PROMPT, s)
    assert a.png == b.png
    m = editor.edit(mirrored(photo), PROMPT, s)
    diff = np.abs(a.pixels.astype(int) - m.pixels.astype(int))
    assert diff.max() > 0, "a mirrored reference gave identical pixels: the reference does not reach the output"
    other_seed = editor.edit(photo, PROMPT, tiny_settings(size="128x128", num_inference_steps="2", seed="8"))
    assert other_seed.png != a.png
    assert a.pixels.shape == (128, 128, 3) and a.pixels.std() > 1


def test_latents_are_drawn_from_the_seed_as_trtmc_draws_them(editor):
    s = tiny_settings()
    noise = editor.noise(s)
    # TRTMC's latent replay (perf-serve latents.py @ d3e1a549 § noise, § _qwen_image):
    # default_rng(seed).standard_normal in (1, 1, in_channels / 4, 2 (H / 16), 2 (W / 16)).
    assert noise.shape == (1, 1, 4, 8, 8) and noise.dtype == np.float32
    assert np.array_equal(noise, np.random.default_rng(int(s.seed)).standard_normal((1, 1, 4, 8, 8), dtype=np.float32))
    a, b = editor.initial_latents(s), editor.initial_latents(s)
    assert a.device.type == "cpu" and str(a.dtype) == "torch.float32"
    assert a.equal(b) and not a.equal(editor.initial_latents(tiny_settings(seed="8")))
    assert tuple(a.shape) == (1, 16, 16)  # 64x64 -> 8x8 latents -> 4x4 patches of 4 channels x 4
    assert a.equal(editor.initial_latents(s, noise)), "packing the given noise is the default path"


def test_a_saved_pipeline_bundle_loads_the_same_pipeline(tmp_path, editor, photo):
    """--save-pipeline: a folder any DiffusionPipeline.from_pretrained loads (what TRTMC's
    perf-serve reference backend serves), holding the same weights: the same edit."""
    out = tmp_path / "saved.bundle"
    assert pipeline.main(["bundle", "--smoke", "--save-pipeline", "-o", str(out)]) == 0
    b = pipeline.read_bundle(out)
    assert b["dir"] == str(out) and (out / "model_index.json").is_file()
    assert {f["path"] for f in b["saved_pipeline"]["files"]} >= {"model_index.json", "transformer/config.json", "vae/config.json"}
    saved = pipeline.Editor(b, device="cpu")
    s = tiny_settings(size="64x64", num_inference_steps="2")
    assert saved.edit(photo, PROMPT, s).png == editor.edit(photo, PROMPT, s).png
    with pytest.raises(pipeline.BundleError, match="give the folder"):
        pipeline.read_bundle(out / "bundle.json")
    assert pipeline.main(["bundle", "--smoke", "--save-pipeline", "-o", str(out)]) == 1, "never written over"


def test_a_saved_pipeline_with_other_weights_is_refused(tmp_path):
    import torch
    from safetensors.torch import load_file, save_file

    out = tmp_path / "saved.bundle"
    assert pipeline.main(["bundle", "--smoke", "--save-pipeline", "-o", str(out)]) == 0
    weights = next((out / "transformer").glob("*.safetensors"))
    tensors = load_file(str(weights))
    name = sorted(tensors)[0]
    tensors[name] = tensors[name] + torch.ones_like(tensors[name])
    save_file(tensors, str(weights), metadata={"format": "pt"})
    with pytest.raises(pipeline.BundleError, match="weights_sha256"):
        pipeline.Editor(pipeline.read_bundle(out), device="cpu")
