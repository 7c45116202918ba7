"""Settings parsing shared by the HTTP fields and the native flags (no model needed)."""

from __future__ import annotations

import pytest

import pipeline

D = pipeline.SMOKE_CONFIG["defaults"]


def test_defaults_when_absent():
    s = pipeline.parse_settings({}, D)
    assert (s.width, s.height, s.num_inference_steps, s.true_cfg_scale, s.negative_prompt, s.seed) == (512, 512, 8, 4.0, " ", 0)


def test_wire_spellings():
    # AIPerf sends every extra input as str(value): "8", "4.0", "42"; clients holding numbers send "8.0".
    s = pipeline.parse_settings({"size": "256X128", "num_inference_steps": "8.0", "true_cfg_scale": "4", "seed": " 42 ", "negative_prompt": ""}, D)
    assert (s.width, s.height, s.num_inference_steps, s.true_cfg_scale, s.seed, s.negative_prompt) == (256, 128, 8, 4.0, 42, "")


@pytest.mark.parametrize(
    "field,value",
    [
        ("size", "100x100"),  # not a multiple of 16
        ("size", "0x512"),
        ("size", "4096x4096"),
        ("size", "512"),
        ("size", "512x512x3"),
        ("num_inference_steps", "0"),
        ("num_inference_steps", "101"),
        ("num_inference_steps", "8.5"),
        ("num_inference_steps", "-1"),
        ("num_inference_steps", "1e1"),
        ("seed", "-1"),
        ("seed", str(2**63)),
        ("true_cfg_scale", "0.5"),
        ("true_cfg_scale", "nan"),
        ("true_cfg_scale", "inf"),
        ("true_cfg_scale", "21"),
        ("true_cfg_scale", "four"),
        ("size", " "),
        ("seed", ""),
    ],
)
def test_invalid_values_name_the_field(field, value):
    with pytest.raises(pipeline.SettingError) as e:
        pipeline.parse_settings({field: value}, D)
    assert e.value.param == field
    assert str(e.value).startswith(field + ":")


def test_unknown_setting_is_an_error():
    with pytest.raises(pipeline.SettingError) as e:
        pipeline.parse_settings({"guidance_scale": "1.0"}, D)
    assert e.value.param == "guidance_scale"


def test_prompt_rules():
    pipeline.check_prompt("Make it night")
    for bad in ("", "   ", "x" * 5000):
        with pytest.raises(pipeline.SettingError):
            pipeline.check_prompt(bad)


def test_quantize_rounds_half_up_and_clamps():
    import numpy as np

    v = np.array([[[-0.5, 0.0, 1.5]], [[0.5 / 255, 1.5 / 255, 254.49 / 255]]], dtype=np.float32)
    assert pipeline.quantize(v).tolist() == [[[0, 0, 255]], [[1, 2, 254]]]


def test_decode_image_rejects_other_formats_and_huge_headers():
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (4, 4)).save(buf, format="BMP")
    with pytest.raises(pipeline.ImageError):
        pipeline.decode_image(buf.getvalue())
    with pytest.raises(pipeline.ImageError):
        pipeline.decode_image(b"not an image")
    big = io.BytesIO()
    Image.new("L", (5000, 4000)).save(big, format="PNG")
    with pytest.raises(pipeline.ImageError) as e:
        pipeline.decode_image(big.getvalue())
    assert e.value.status == 413


def test_rgba_alpha_is_dropped_not_composited():
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGBA", (2, 2), (10, 20, 30, 0)).save(buf, format="PNG")
    assert pipeline.decode_image(buf.getvalue()).getpixel((0, 0)) == (10, 20, 30)
