"""server.py and native.py on the CPU: the HTTP contract, records, and native == HTTP pixels."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest

from conftest import REFERENCE, TINY, free_port

MODEL = "Qwen/Qwen-Image-Edit-2511"
PROMPT = "Make it a night scene with a full moon."


def multipart(fields: list[tuple[str, str | bytes, bool]]) -> tuple[bytes, str]:
    """Fields in order; (name, value, is_file). The shape AIPerf 0.13.0 sends."""
    boundary = uuid.uuid4().hex
    out = b""
    for name, value, is_file in fields:
        out += f"--{boundary}\r\n".encode()
        if is_file:
            out += f'Content-Disposition: form-data; name="{name}"; filename="image.png"\r\nContent-Type: image/png\r\n\r\n'.encode()
            out += value + b"\r\n"
        else:
            out += f'Content-Disposition: form-data; name="{name}"\r\n\r\n'.encode() + value.encode() + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return out, f"multipart/form-data; boundary={boundary}"


def edit_fields(image: bytes, **settings) -> list:
    base = [("prompt", PROMPT, False), ("model", MODEL, False), ("response_format", "b64_json", False), ("n", "1", False), ("image", image, True)]
    return base + [(k, v, False) for k, v in dict(TINY, **settings).items()]


def post(url: str, fields: list, rid: str | None = None):
    body, ctype = multipart(fields)
    req = urllib.request.Request(url + "/v1/images/edits", data=body, method="POST", headers={"Content-Type": ctype})
    if rid is not None:
        req.add_header("X-Request-ID", rid)
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return r.status, dict(r.headers), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read())


def get(url: str, path: str):
    try:
        with urllib.request.urlopen(url + path, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def start(bundle, tmp_path, http: str):
    port = free_port()
    records = tmp_path / f"records-{http}.jsonl"
    log = open(tmp_path / f"server-{http}.log", "w")
    cmd = [sys.executable, str(REFERENCE / "server.py"), str(bundle), "--model-name", MODEL, "--host", "127.0.0.1",
           "--port", str(port), "--records", str(records), "--device", "cpu", "--http", http]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    saw_503 = False
    deadline = time.time() + 120
    while time.time() < deadline:
        assert proc.poll() is None, (tmp_path / f"server-{http}.log").read_text()
        try:
            code, _ = get(url, "/health/ready")
            saw_503 |= code == 503
            if code == 200:
                return proc, url, records, saw_503
        except OSError:
            pass
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("server not ready in 120 s")


@pytest.fixture(scope="module", params=["aiohttp", "stdlib"])
def server(request, bundle_path, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("server-" + request.param)
    proc, url, records, saw_503 = start(bundle_path, tmp, request.param)
    yield {"url": url, "records": records, "saw_503": saw_503, "http": request.param, "tmp": tmp}
    proc.terminate()
    proc.wait(timeout=30)


def test_health_and_models(server):
    assert server["saw_503"], "/health/ready answered 200 before the pipeline was loaded (or never 503)"
    assert get(server["url"], "/health/live") == (200, {"status": "live"})
    assert get(server["url"], "/health/ready")[0] == 200
    code, body = get(server["url"], "/v1/models")
    assert code == 200 and body["data"][0]["id"] == MODEL and body["data"][0]["smoke"] is True


def test_edit_body_header_records_and_native_identity(server, photo, bundle_path, tmp_path):
    code, headers, body = post(server["url"], edit_fields(photo), rid="qualkit-test-1")
    assert code == 200, body
    assert headers["X-Request-ID"] == "qualkit-test-1" and body["request_id"] == "qualkit-test-1"
    assert body["backend"] == "diffusers" and body["model"] == MODEL and isinstance(body["created"], int)
    st = body["settings"]
    assert st["smoke"] is True and st["precision"] == "fp32" and st["profile"] == "smoke" and st["device"] == "cpu"
    assert (st["width"], st["height"], st["seed"], st["num_inference_steps"], st["true_cfg_scale"], st["negative_prompt"]) == (64, 64, 7, 1, 4.0, " ")
    t = body["timing"]
    assert set(t) == {"queue_ms", "task_ms", "handler_ms"} and 0 < t["task_ms"] <= t["handler_ms"]
    assert headers["Server-Timing"] == f"task;dur={t['task_ms']}"
    png = base64.b64decode(body["data"][0]["b64_json"])
    assert png.startswith(b"\x89PNG")
    lines = [json.loads(x) for x in server["records"].read_text().splitlines()]
    rec = [r for r in lines if r["request_id"] == "qualkit-test-1"][0]
    assert rec["status"] == 200 and rec["output_sha256"] == hashlib.sha256(png).hexdigest()
    assert rec["input_sha256"] == hashlib.sha256(photo).hexdigest() and rec["timing"] == t and rec["error"] is None
    assert set(rec) == {"request_id", "time", "route", "status", "input_sha256", "prompt", "settings", "output_sha256", "timing", "error"}

    # The native Task, replaying the same request: the same pixels (and bytes).
    img = tmp_path / "in.png"
    img.write_bytes(photo)
    out = tmp_path / "native.png"
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in TINY.items()]
    p = subprocess.run([sys.executable, str(REFERENCE / "native.py"), str(bundle_path), "--image", str(img), f"--prompt={PROMPT}",
                        *flags, "--output", str(out), "--device", "cpu"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout.strip().splitlines()[-1])
    assert out.read_bytes() == png
    assert report["output_sha256"] == rec["output_sha256"] and report["settings"] == st and report["timing"]["task_ms"] > 0


@pytest.mark.parametrize(
    "mutate,status,param",
    [
        (lambda f: f + [("guidance_scale", "1.0", False)], 400, "guidance_scale"),
        (lambda f: [x for x in f if x[0] != "prompt"], 400, "prompt"),
        (lambda f: [x for x in f if x[0] != "image"], 400, "image"),
        (lambda f: [x if x[0] != "n" else ("n", "2", False) for x in f], 400, "n"),
        (lambda f: [x if x[0] != "model" else ("model", "other", False) for x in f], 400, "model"),
        (lambda f: [x if x[0] != "response_format" else ("response_format", "url", False) for x in f], 400, "response_format"),
        (lambda f: f + [("prompt", "again", False)], 400, "prompt"),
        (lambda f: f + [("image[]", b"x", True)], 400, "image[]"),
        (lambda f: [x if x[0] != "size" else ("size", "100x100", False) for x in f], 400, "size"),
        (lambda f: [x if x[0] != "image" else ("image", "http://example.invalid/x.png", False) for x in f], 400, "image"),
        (lambda f: [x if x[0] != "image" else ("image", b"not a png", True) for x in f], 400, "image"),
    ],
)
def test_bad_requests(server, house, mutate, status, param):
    code, headers, body = post(server["url"], mutate(edit_fields(house)), rid="bad-" + str(param))
    assert code == status, body
    assert body["error"]["param"] == param and body["error"]["type"] == "invalid_request_error"
    assert body["request_id"] == headers["X-Request-ID"] == "bad-" + str(param)


def test_invalid_request_id_is_replaced(server, house):
    code, headers, body = post(server["url"], edit_fields(house) + [("extra", "1", False)], rid="has space")
    assert code == 400
    assert headers["X-Request-ID"] != "has space" and len(headers["X-Request-ID"]) == 36


def test_image_array_name_is_accepted(server, house):
    fields = [x if x[0] != "image" else ("image[]", x[1], True) for x in edit_fields(house)]
    code, _, body = post(server["url"], fields)
    assert code == 200, body


def test_failed_load_exits_1(tmp_path, bundle_path):
    b = json.loads(bundle_path.read_text())
    b["smoke"]["weights_sha256"] = "0" * 64
    bad = tmp_path / "bad.bundle"
    bad.write_text(json.dumps(b))
    for http in ("aiohttp", "stdlib"):
        p = subprocess.run([sys.executable, str(REFERENCE / "server.py"), str(bad), "--model-name", MODEL, "--port", str(free_port()),
                            "--device", "cpu", "--http", http], capture_output=True, text=True, timeout=120)
        assert p.returncode == 1, (http, p.stderr[-2000:])
        assert "weights_sha256" in p.stderr


def test_native_usage_errors(bundle_path, tmp_path, house):
    img = tmp_path / "in.png"
    img.write_bytes(house)
    base = [sys.executable, str(REFERENCE / "native.py"), str(bundle_path), "--image", str(img), "--output", str(tmp_path / "o.png")]
    p = subprocess.run(base + ["--prompt=x", "--size=100x100", "--device", "cpu"], capture_output=True, text=True)
    assert p.returncode == 2 and "--size" in p.stderr
    p = subprocess.run(base + ["--prompt=x", "--seed=-1", "--device", "cpu"], capture_output=True, text=True)
    assert p.returncode == 2 and "--seed" in p.stderr
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    p = subprocess.run(base + ["--prompt=x"], capture_output=True, text=True, env=env)
    assert p.returncode == 1 and "--device cpu" in p.stderr
