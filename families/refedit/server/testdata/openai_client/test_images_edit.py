"""The official openai client's images.edit against a real refedit server on loopback.

Each field of OpenAI's images.edit either works or is refused as families/refedit/README.md
("OpenAI's images.edit") says: the exact status, the error's param, and for an accepted
field that cannot change the edit, the "ignored" entry the server reports. The server is
the refedit binary built from this checkout (`go build`, $GO or go), serving a bundle it
built, on a free port of 127.0.0.1; nothing is fetched.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
import struct
import subprocess
import time
import urllib.request
import zlib
from pathlib import Path

import openai
import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[5]
WEBP = ROOT / "families/refedit/edit/testdata/gradient-16x8-lossless.webp"
MODEL = "refedit-openai-test"
MAX_BODY = 64 << 20  # server.DefaultMaxBodyBytes


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A refedit serve at its default limits; yields (base URL, records path)."""
    tmp = tmp_path_factory.mktemp("refedit")
    binary, bundle, records = tmp / "refedit", tmp / "bundle.json", tmp / "records.jsonl"
    go = os.environ.get("GO", "go")
    subprocess.run([go, "build", "-o", str(binary), "./families/refedit/cmd/refedit"], cwd=ROOT, check=True)
    subprocess.run([str(binary), "build", "-o", str(bundle)], check=True, capture_output=True)
    log = (tmp / "serve.log").open("w+")
    proc = subprocess.Popen(
        [str(binary), "serve", str(bundle), "--model-name", MODEL, "--port", "0", "--records", str(records)],
        stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        base = _wait_ready(proc, tmp / "serve.log")
        yield base, records
    finally:
        proc.terminate()
        code = proc.wait(timeout=30)
        log.close()
        text = (tmp / "serve.log").read_text()
        shutil.rmtree(tmp)  # the binary is 10 MB: nothing of the run is left
        assert code == 0, text


def _wait_ready(proc, log_path: Path) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"refedit serve exited {proc.returncode}: {log_path.read_text()}"
        m = re.search(r"serving model \S+ at (http://127\.0\.0\.1:\d+)", log_path.read_text())
        if m:
            with urllib.request.urlopen(m.group(1) + "/health/ready", timeout=5) as r:
                assert r.status == 200
            return m.group(1)
        time.sleep(0.05)
    raise AssertionError(f"refedit serve not ready in 60 s: {log_path.read_text()}")


@pytest.fixture(scope="module")
def client(server):
    base, _ = server
    # No retries: a refusal must reach the test as the server gave it. No proxy: loopback.
    return openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=120,
                         http_client=openai.DefaultHttpxClient(trust_env=False))


def png(w: int, h: int) -> bytes:
    img = Image.new("RGB", (w, h))
    img.putdata([((x * 9) % 256, (y * 5) % 256, (x + y) % 256) for y in range(h) for x in range(w)])
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def padded_png(n: int) -> bytes:
    """A valid 16x16 PNG made n bytes longer by a private ancillary chunk after IHDR
    (decoders skip it, as they skip large metadata): an image file of about n bytes."""
    data = png(16, 16)
    end = 8 + 8 + 13 + 4
    chunk = b"quAl" + bytes(n)
    return data[:end] + struct.pack(">I", n) + chunk + struct.pack(">I", zlib.crc32(chunk)) + data[end:]


def edit(client, image=None, prompt="invert it", **fields):
    image = image if image is not None else ("gradient.webp", WEBP.read_bytes(), "image/webp")
    return client.images.edit(image=image, prompt=prompt, model=MODEL, **fields)


def output_size(resp) -> tuple[int, int]:
    out = Image.open(io.BytesIO(base64.b64decode(resp.data[0].b64_json)))
    assert out.format == "PNG"
    return out.size


def test_webp_input(client):
    resp = edit(client)
    assert output_size(resp) == (16, 8)
    assert resp.to_dict()["settings"]["edit"] == "invert"
    assert "ignored" not in resp.to_dict()


def test_size_auto_is_the_input_size(client):
    resp = edit(client, image=("a.png", png(24, 10), "image/png"), size="auto")
    assert output_size(resp) == (24, 10)
    assert "ignored" not in resp.to_dict(), "size=auto is honoured, not ignored"


def test_size_auto_of_an_input_no_size_can_name(client):
    with pytest.raises(openai.BadRequestError) as e:
        edit(client, image=("wide.png", png(8193, 1), "image/png"), size="auto")
    assert e.value.status_code == 400
    assert e.value.body["param"] == "size"
    assert "auto (the input's size" in e.value.body["message"]
    assert "is 8193x1: want W and H in 1..8192; give size=WxH" in e.value.body["message"]


ACCEPTED = [
    # field, value the client sends, what "ignored" says
    ("quality", "high", "high"),
    ("quality", "auto", "auto"),
    ("output_format", "png", "png"),
    ("user", "user-4242", "9 bytes"),
    ("safety_identifier", "sha256:abc", "10 bytes"),
    ("background", "opaque", "opaque"),
    ("background", "auto", "auto"),
    ("complexity", "medium", "medium"),
    ("input_fidelity", "high", "high"),
    ("output_compression", 80, "80"),
    ("stream", False, "false"),
]


@pytest.mark.parametrize("field,value,recorded", ACCEPTED, ids=[f"{f}={v}" for f, v, _ in ACCEPTED])
def test_accepted_and_reported_ignored(client, server, field, value, recorded):
    plain = edit(client)
    resp = edit(client, **{field: value})
    assert resp.to_dict()["ignored"] == {field: recorded}
    assert resp.data[0].b64_json == plain.data[0].b64_json, f"{field} changed the edit"
    _, records = server
    last = json.loads(records.read_text().splitlines()[-1])
    assert last["status"] == 200
    assert last["ignored"] == {field: recorded}
    if field in ("user", "safety_identifier"):
        assert value not in records.read_text(), "an identifier is recorded by its length only"


REFUSED = [
    # field, value, the error's param, a part of its message
    ("output_format", "jpeg", "output_format", 'output_format "jpeg" is not supported: want one of png'),
    ("output_format", "webp", "output_format", "want one of png"),
    ("background", "transparent", "background", "refedit's output is opaque RGB"),
    ("quality", "ultra", "quality", "want one of auto, low, medium, high, xhigh, max, standard"),
    ("output_compression", 101, "output_compression", "want an integer in 0..100"),
    ("n", 2, "n", "only 1 image per request"),
    ("response_format", "url", "response_format", 'only "b64_json"'),
    ("mask", ("mask.png", b"\x89PNG\r\n\x1a\n", "image/png"), "mask", "mask is not supported"),
    ("partial_images", 2, "partial_images", "partial images are streamed"),
    ("frame_count", 4, "frame_count", "refedit writes one PNG"),
    ("svg", {"model": "x"}, "svg[model]", "refedit writes PNG only"),
    ("size", "3840x2160", "size", "over the pixel limit of 4194304"),
]


@pytest.mark.parametrize("field,value,param,message", REFUSED,
                         ids=[f"{f}={v}" if isinstance(v, (str, int)) else f for f, v, _, _ in REFUSED])
def test_refused_by_name(client, field, value, param, message):
    with pytest.raises(openai.BadRequestError) as e:
        edit(client, **{field: value})
    assert e.value.status_code == 400
    assert e.value.body["param"] == param
    assert message in e.value.body["message"]
    assert e.value.body["type"] == "invalid_request_error"


def test_two_images_are_refused(client):
    img = ("a.png", png(8, 8), "image/png")
    with pytest.raises(openai.BadRequestError) as e:
        edit(client, image=[img, img])
    assert e.value.body["param"] == "image[]"
    assert "exactly one image file part" in e.value.body["message"]


def test_fifty_megabyte_image(client):
    """OpenAI's limit on one image; the body limit is above it."""
    resp = edit(client, image=("big.png", padded_png(50_000_000), "image/png"), prompt="invert")
    assert output_size(resp) == (16, 16)


def test_body_over_the_limit_is_413(client):
    with pytest.raises(openai.APIStatusError) as e:
        edit(client, image=("huge.png", padded_png(MAX_BODY), "image/png"), prompt="invert")
    assert e.value.status_code == 413
    assert e.value.body["code"] == "request_too_large"
    assert f"over the limit of {MAX_BODY} bytes" in e.value.body["message"]
