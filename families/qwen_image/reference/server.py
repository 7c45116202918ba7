"""HTTP server of the diffusers reference backend: the same contract as the other backends.

    python server.py BUNDLE --model-name NAME [--host 127.0.0.1] [--port 8000]
        [--records FILE] [--device cuda|cuda:N|cpu] [--queue-depth N] [--max-body-bytes N]
        [--http auto|aiohttp|stdlib]

Routes: POST /v1/images/edits (multipart, as AIPerf 0.13.0 sends it), GET /health/live,
GET /health/ready (503 until the pipeline is loaded), GET /v1/models. The port is bound
first and the pipeline loaded in the background, so readiness is observable; a failed
load ends the process with exit code 1.

Fields: prompt (required), model (must equal --model-name when present),
response_format (b64_json only), n (1 only), exactly one file part image or image[], and
the settings size, seed, num_inference_steps, true_cfg_scale, negative_prompt. Anything
else is 400 unknown field. The body (200):
  {"created", "model", "backend": "diffusers", "request_id", "data": [{"b64_json"}],
   "settings": {width, height, num_inference_steps, true_cfg_scale, negative_prompt, seed,
                precision, device, profile, smoke},
   "timing": {"queue_ms", "task_ms", "handler_ms"}}
task_ms is the Task call (decode + pipeline + quantize + PNG encode, Editor.edit);
queue_ms the wait for the one worker; handler_ms the whole handler. Errors:
  {"error": {"message", "type", "param"}, "request_id"} with 400, 413, 429 (+ Retry-After: 1),
  503 (not loaded yet) or 500.
X-Request-ID is honoured (1..200 visible ASCII characters, else a fresh UUIDv4) and echoed
in the header, the body and the records file. Records: one JSONL line per edit request,
written before the response: {request_id, time, route, status, input_sha256, prompt,
settings, output_sha256, timing, error}.

aiohttp is used when it is importable (it is on the GPU machine); otherwise, or with
--http stdlib, the standard library's ThreadingHTTPServer serves the same contract.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime as dt
import hashlib
import json
import os
import re
import signal
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pipeline  # noqa: E402

EDIT_ROUTE = "/v1/images/edits"
WIRE_FIELDS = ("prompt", "model", "response_format", "n")
IMAGE_FIELDS = ("image", "image[]")
KNOWN_FIELDS = set(WIRE_FIELDS) | set(IMAGE_FIELDS) | set(pipeline.SETTING_FIELDS)
REQUEST_ID = re.compile(r"^[\x21-\x7e]{1,200}$")


def log(msg: str) -> None:
    print(f"{dt.datetime.now(dt.timezone.utc).isoformat(timespec='milliseconds')} {msg}", file=sys.stderr, flush=True)


class HTTPError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.param, self.headers = status, message, param, headers or {}


def request_id(header: str | None) -> str:
    if header and REQUEST_ID.match(header):
        return header
    return str(uuid.uuid4())


class Service:
    """The transport-independent part: validation, the one worker, records and bodies."""

    def __init__(self, bundle_path: str, model: str, device: str, records: str | None, queue_depth: int, max_body: int):
        self.bundle_path = bundle_path
        self.bundle = pipeline.read_bundle(bundle_path)
        self.bundle_sha256 = pipeline.bundle_sha256(Path(bundle_path))
        self.model = model
        self.device = device
        self.queue_depth = queue_depth
        self.max_body = max_body
        self.editor: pipeline.Editor | None = None
        self.load_error: str | None = None
        self.ready = threading.Event()
        self.failed = threading.Event()
        self.records = open(records, "a", encoding="utf-8") if records else None
        self.records_lock = threading.Lock()
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="edit")
        self.waiting = 0
        self.waiting_lock = threading.Lock()

    def load(self) -> None:
        try:
            self.editor = pipeline.Editor(self.bundle, device=self.device, log=log)
            log(f"ready: runtime {json.dumps(self.editor.runtime(), sort_keys=True)}")
            self.ready.set()
        except Exception as e:  # the process exits; the harness shows the log
            self.load_error = f"{type(e).__name__}: {e}"
            log(f"load failed: {self.load_error}")
            self.failed.set()

    # -- request validation (fields as (name, value, is_file) in arrival order)

    def validate(self, parts: list[tuple[str, bytes | str, bool]]):
        seen: dict[str, object] = {}
        for name, value, is_file in parts:
            if name not in KNOWN_FIELDS:
                raise HTTPError(400, f'unknown field "{name}"', name)
            key = "image" if name in IMAGE_FIELDS else name
            if key in seen:
                raise HTTPError(400, f'field "{name}" given twice' if key != "image" else "more than one image part", name)
            if key == "image" and not is_file:
                raise HTTPError(400, f'"{name}" must be a file part, not a text field', name)
            if key != "image" and is_file:
                raise HTTPError(400, f'"{name}" must be a text field, not a file part', name)
            seen[key] = value
        prompt = seen.get("prompt")
        if prompt is None:
            raise HTTPError(400, "prompt: required", "prompt")
        try:
            pipeline.check_prompt(prompt)
        except pipeline.SettingError as e:
            raise HTTPError(400, str(e), e.param) from None
        if "model" in seen and seen["model"] != self.model:
            raise HTTPError(400, f"model: this server serves {self.model!r}, got {seen['model']!r}", "model")
        if "response_format" in seen and seen["response_format"] != "b64_json":
            raise HTTPError(400, f"response_format: only b64_json, got {seen['response_format']!r}", "response_format")
        if "n" in seen and seen["n"].strip() != "1":
            raise HTTPError(400, f"n: only 1, got {seen['n']!r}", "n")
        if "image" not in seen:
            raise HTTPError(400, "image: a file part named image (or image[]) is required", "image")
        fields = {k: v for k, v in seen.items() if k in pipeline.SETTING_FIELDS}
        try:
            settings = pipeline.parse_settings(fields, self.bundle["defaults"])
        except pipeline.SettingError as e:
            raise HTTPError(400, str(e), e.param) from None
        return prompt, seen["image"], settings

    # -- the edit, on the one worker

    def admit(self) -> None:
        with self.waiting_lock:
            if self.waiting > self.queue_depth:
                raise HTTPError(429, f"queue full ({self.queue_depth} waiting)", None, {"Retry-After": "1"})
            self.waiting += 1

    def release(self) -> None:
        with self.waiting_lock:
            self.waiting -= 1

    def run_edit(self, image: bytes, prompt: str, settings, queued_at: float):
        started = time.perf_counter()
        try:
            return self.editor.edit(image, prompt, settings), (started - queued_at) * 1000
        except pipeline.ImageError as e:
            raise HTTPError(e.status, str(e), "image") from None

    # -- bodies and records

    def record(self, rid: str, arrival: str, status: int, input_sha: str | None, prompt, settings, output_sha, timing, error) -> None:
        if self.records is None:
            return
        line = json.dumps(
            {
                "request_id": rid,
                "time": arrival,
                "route": EDIT_ROUTE,
                "status": status,
                "input_sha256": input_sha,
                "prompt": prompt,
                "settings": settings,
                "output_sha256": output_sha,
                "timing": timing,
                "error": error,
            },
            sort_keys=True,
        )
        with self.records_lock:
            self.records.write(line + "\n")
            self.records.flush()

    def error_body(self, rid: str, e: HTTPError) -> dict:
        kind = "invalid_request_error" if 400 <= e.status < 500 else "server_error"
        return {"error": {"message": e.message, "type": kind, "param": e.param}, "request_id": rid}

    def success_body(self, rid: str, res: pipeline.EditResult, timing: dict) -> dict:
        return {
            "created": int(time.time()),
            "model": self.model,
            "backend": "diffusers",
            "request_id": rid,
            "data": [{"b64_json": base64.b64encode(res.png).decode()}],
            "settings": res.settings,
            "timing": timing,
        }

    def models_body(self) -> dict:
        # The model is listed once the pipeline is loaded (as /health/ready answers 200),
        # never before: a client that waits for it here sends no request to a loading server.
        if not self.ready.is_set():
            return {"object": "list", "data": []}
        return {
            "object": "list",
            "data": [
                {
                    "id": self.model,
                    "object": "model",
                    "owned_by": "qualkit-diffusers",
                    # The checkpoint the bundle names (a smoke bundle is built in its shape and
                    # names it too): the harness holds the row's model to it.
                    "checkpoint": self.bundle["model"],
                    "profile": self.bundle["profile"],
                    "smoke": self.bundle["profile"] == "smoke",
                    "bundle_sha256": self.bundle_sha256,
                }
            ],
        }


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def sha(b: bytes | None) -> str | None:
    return hashlib.sha256(b).hexdigest() if b is not None else None


# ----------------------------------------------------------------------------- aiohttp


def run_aiohttp(svc: Service, host: str, port: int) -> int:
    from aiohttp import web

    async def edit(request: web.Request) -> web.Response:
        t0 = time.perf_counter()
        arrival = dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")
        rid = request_id(request.headers.get("X-Request-ID"))
        input_bytes, prompt, timing = None, None, None
        try:
            if request.content_length is not None and request.content_length > svc.max_body:
                raise HTTPError(413, f"body of {request.content_length} bytes is over the limit of {svc.max_body}")
            if not request.content_type.startswith("multipart/form-data"):
                raise HTTPError(400, "want multipart/form-data")
            parts, total = [], 0
            reader = await request.multipart()
            while True:
                part = await reader.next()
                if part is None:
                    break
                data = await part.read(decode=False)
                total += len(data)
                if total > svc.max_body:
                    raise HTTPError(413, f"body is over the limit of {svc.max_body} bytes")
                if part.filename is not None:
                    if part.name in IMAGE_FIELDS and input_bytes is None:
                        input_bytes = bytes(data)
                    parts.append((part.name, bytes(data), True))
                else:
                    text = bytes(data).decode("utf-8", errors="strict")
                    if part.name == "prompt":
                        prompt = text
                    parts.append((part.name, text, False))
            prompt, image, settings = svc.validate(parts)
            if not svc.ready.is_set():
                raise HTTPError(503, "the pipeline is still loading")
            svc.admit()
            try:
                res, queue_ms = await asyncio.get_running_loop().run_in_executor(
                    svc.worker, svc.run_edit, image, prompt, settings, time.perf_counter()
                )
            finally:
                svc.release()
            timing = {"queue_ms": round(queue_ms, 3), "task_ms": res.task_ms, "handler_ms": ms(time.perf_counter() - t0)}
            body = svc.success_body(rid, res, timing)
            svc.record(rid, arrival, 200, res.input_sha256, prompt, res.settings, res.output_sha256, timing, None)
            log(f"{rid} 200 task {res.task_ms:.1f} ms queue {queue_ms:.1f} ms")
            return web.json_response(body, headers={"X-Request-ID": rid, "Server-Timing": f"task;dur={res.task_ms}"})
        except HTTPError as e:
            return _aio_error(svc, rid, arrival, e, input_bytes, prompt, t0)
        except (UnicodeDecodeError, ValueError) as e:
            return _aio_error(svc, rid, arrival, HTTPError(400, f"malformed multipart body: {e}"), input_bytes, prompt, t0)
        except web.HTTPRequestEntityTooLarge:
            return _aio_error(svc, rid, arrival, HTTPError(413, f"body is over the limit of {svc.max_body} bytes"), input_bytes, prompt, t0)
        except asyncio.CancelledError:
            svc.record(rid, arrival, 499, sha(input_bytes), prompt, None, None, None, "client closed the request")
            raise
        except Exception as e:
            log(f"{rid} 500 {type(e).__name__}: {e}")
            return _aio_error(svc, rid, arrival, HTTPError(500, f"{type(e).__name__}: {e}"), input_bytes, prompt, t0)

    def _aio_error(svc, rid, arrival, e: HTTPError, input_bytes, prompt, t0):
        svc.record(rid, arrival, e.status, sha(input_bytes), prompt, None, None, {"handler_ms": ms(time.perf_counter() - t0)}, e.message)
        log(f"{rid} {e.status} {e.message}")
        return web.json_response(svc.error_body(rid, e), status=e.status, headers={"X-Request-ID": rid, **e.headers})

    @web.middleware
    async def echo_id(request, handler):
        resp = await handler(request)
        if "X-Request-ID" not in resp.headers:
            resp.headers["X-Request-ID"] = request_id(request.headers.get("X-Request-ID"))
        return resp

    async def live(request):
        return web.json_response({"status": "live"})

    async def ready(request):
        if svc.ready.is_set():
            return web.json_response({"status": "ready"})
        return web.json_response({"status": "loading"}, status=503)

    async def models(request):
        return web.json_response(svc.models_body())

    async def load_in_background(app):
        def load_or_stop():
            svc.load()
            if svc.failed.is_set():
                os.kill(os.getpid(), signal.SIGTERM)  # run_app stops on it; main returns 1

        threading.Thread(target=load_or_stop, daemon=True, name="load").start()
        yield

    app = web.Application(client_max_size=svc.max_body + (1 << 20), middlewares=[echo_id])
    app.router.add_post(EDIT_ROUTE, edit)
    app.router.add_get("/health/live", live)
    app.router.add_get("/health/ready", ready)
    app.router.add_get("/v1/models", models)
    app.cleanup_ctx.append(load_in_background)
    log(f"serving {svc.model} ({svc.bundle['profile']}, bundle sha256 {svc.bundle_sha256}) on http://{host}:{port} with aiohttp")
    web.run_app(app, host=host, port=port, print=None, shutdown_timeout=30, access_log=None)
    return 1 if svc.failed.is_set() else 0


# ----------------------------------------------------------------------------- standard library


def parse_multipart(content_type: str, body: bytes) -> list[tuple[str, bytes | str, bool]]:
    """multipart/form-data into (name, value, is_file) in order, with the email package."""
    from email.parser import BytesParser
    from email.policy import HTTP

    msg = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + body)
    if not msg.is_multipart():
        raise HTTPError(400, "want multipart/form-data")
    out = []
    for part in msg.iter_parts():
        if part.get_content_disposition() != "form-data" or part.get_param("name", header="content-disposition") is None:
            raise HTTPError(400, "malformed multipart body: a part without a form-data name")
        name = part.get_param("name", header="content-disposition")
        filename = part.get_param("filename", header="content-disposition")
        data = part.get_payload(decode=True) or b""
        if filename is not None:
            out.append((name, data, True))
        else:
            out.append((name, data.decode("utf-8"), False))
    return out


def run_stdlib(svc: Service, host: str, port: int) -> int:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    edit_lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def send_json(self, status: int, body: dict, rid: str, headers: dict | None = None):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("X-Request-ID", rid)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            rid = request_id(self.headers.get("X-Request-ID"))
            if self.path == "/health/live":
                self.send_json(200, {"status": "live"}, rid)
            elif self.path == "/health/ready":
                self.send_json(200 if svc.ready.is_set() else 503, {"status": "ready" if svc.ready.is_set() else "loading"}, rid)
            elif self.path == "/v1/models":
                self.send_json(200, svc.models_body(), rid)
            else:
                self.send_json(404, {"error": {"message": "not found", "type": "invalid_request_error", "param": None}}, rid)

        def do_POST(self):
            t0 = time.perf_counter()
            arrival = dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")
            rid = request_id(self.headers.get("X-Request-ID"))
            input_bytes, prompt = None, None
            try:
                if self.path != EDIT_ROUTE:
                    self.send_json(404, {"error": {"message": "not found", "type": "invalid_request_error", "param": None}}, rid)
                    return
                length = int(self.headers.get("Content-Length") or 0)
                if length > svc.max_body:
                    self.close_connection = True
                    raise HTTPError(413, f"body of {length} bytes is over the limit of {svc.max_body}")
                body = self.rfile.read(length)
                ctype = self.headers.get("Content-Type", "")
                if not ctype.startswith("multipart/form-data"):
                    raise HTTPError(400, "want multipart/form-data")
                parts = parse_multipart(ctype, body)
                for name, value, is_file in parts:
                    if is_file and name in IMAGE_FIELDS and input_bytes is None:
                        input_bytes = value
                    if name == "prompt" and not is_file:
                        prompt = value
                prompt, image, settings = svc.validate(parts)
                if not svc.ready.is_set():
                    raise HTTPError(503, "the pipeline is still loading")
                svc.admit()
                try:
                    queued = time.perf_counter()
                    with edit_lock:
                        res, queue_ms = svc.run_edit(image, prompt, settings, queued)
                finally:
                    svc.release()
                timing = {"queue_ms": round(queue_ms, 3), "task_ms": res.task_ms, "handler_ms": ms(time.perf_counter() - t0)}
                svc.record(rid, arrival, 200, res.input_sha256, prompt, res.settings, res.output_sha256, timing, None)
                log(f"{rid} 200 task {res.task_ms:.1f} ms queue {queue_ms:.1f} ms")
                self.send_json(200, svc.success_body(rid, res, timing), rid, {"Server-Timing": f"task;dur={res.task_ms}"})
            except Exception as e:
                if not isinstance(e, HTTPError):
                    if isinstance(e, (UnicodeDecodeError, ValueError)):
                        e = HTTPError(400, f"malformed multipart body: {e}")
                    else:
                        log(f"{rid} 500 {type(e).__name__}: {e}")
                        e = HTTPError(500, f"{type(e).__name__}: {e}")
                svc.record(rid, arrival, e.status, sha(input_bytes), prompt, None, None, {"handler_ms": ms(time.perf_counter() - t0)}, e.message)
                log(f"{rid} {e.status} {e.message}")
                self.send_json(e.status, svc.error_body(rid, e), rid, e.headers)

    httpd = ThreadingHTTPServer((host, port), Handler)
    httpd.daemon_threads = True
    stop = threading.Event()

    def shutdown(*_):
        if not stop.is_set():
            stop.set()
            threading.Thread(target=httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    threading.Thread(target=svc.load, daemon=True).start()

    def watch():
        svc.failed.wait()
        shutdown()

    threading.Thread(target=watch, daemon=True).start()
    log(f"serving {svc.model} ({svc.bundle['profile']}, bundle sha256 {svc.bundle_sha256}) on http://{host}:{port} with the standard library")
    httpd.serve_forever(poll_interval=0.2)
    httpd.server_close()
    return 1 if svc.failed.is_set() else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="server.py", description="HTTP server of the diffusers reference backend")
    ap.add_argument("bundle")
    ap.add_argument("--model-name", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--records", help="JSONL file: one line per edit request")
    ap.add_argument("--device", default="cuda", help="cuda (default), cuda:N, or cpu (only when given explicitly)")
    ap.add_argument("--queue-depth", type=int, default=16, help="edits that may wait while one runs")
    ap.add_argument("--max-body-bytes", type=int, default=32 << 20)
    ap.add_argument("--http", choices=("auto", "aiohttp", "stdlib"), default="auto")
    args = ap.parse_args(argv)
    try:
        svc = Service(args.bundle, args.model_name, args.device, args.records, args.queue_depth, args.max_body_bytes)
    except pipeline.BundleError as e:
        print(f"server.py: {e}", file=sys.stderr)
        return 1
    impl = args.http
    if impl == "auto":
        try:
            import aiohttp  # noqa: F401

            impl = "aiohttp"
        except ImportError:
            impl = "stdlib"
    return run_aiohttp(svc, args.host, args.port) if impl == "aiohttp" else run_stdlib(svc, args.host, args.port)


if __name__ == "__main__":
    sys.exit(main())
