"""qualkit's stand-in for TRTMC's tools/e2e_evidence.py (@ e2c6fa14), the pytest plugin the
root conftest loads (pytest_plugins), not TRTMC's code. It keeps what a run of the
families case shows of it:

- with TRTMC_E2E_ARTIFACT_DIR set, a selected `test_*e2e` case with a `case_name`
  parameter under families/<family>/ writes <artifacts>/evidence/<family>/<case>/
  evidence.json (schema_version 1, family, case, source_revision, nodeid, status
  passed/failed/error/skipped, failure_stage, observations, checks, timing, artifacts,
  issues, each value a case recorded also under its own name) and report.html, once the
  case's teardown is reported;
- TRTMC_E2E_SOURCE_REVISION, when set, must be one 40-hex commit, else the case errors
  at setup with "TRTMC_E2E_SOURCE_REVISION must be one exact source commit"; unset, the
  revision is `git rev-parse HEAD` of the rootdir, or "unknown";
- record_evidence(name, value) and evidence_stage(name) do nothing outside such a case.

Not played: copying recorded files and arrays into artifacts/ (values are recorded as
their paths, shapes and dtypes), pass-by-pass assertion checks, the size bounds.
"""

import contextvars
import json
import os
import re
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

_ACTIVE = contextvars.ContextVar("e2e_evidence", default=None)
_REVISION = re.compile(r"[0-9a-f]{40}")
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_RESERVED = {"schema_version", "family", "case", "source_revision", "nodeid", "status", "failure", "failure_stage",
             "duration_seconds", "checks", "timing", "artifacts", "observations", "issues"}


def _revision(repository):
    supplied = os.environ.get("TRTMC_E2E_SOURCE_REVISION", "")
    if supplied:
        if not _REVISION.fullmatch(supplied):
            raise ValueError("TRTMC_E2E_SOURCE_REVISION must be one exact source commit")
        return supplied
    done = subprocess.run(["git", "-C", str(repository), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    value = done.stdout.strip()
    return value if done.returncode == 0 and _REVISION.fullmatch(value) else "unknown"


def _plain(value):
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return {"shape": list(value.shape), "dtype": str(value.dtype)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return {"unavailable_type": type(value).__name__}


class Evidence:
    def __init__(self, directory, **identity):
        self.directory = directory
        self.stage = "setup"
        self.started = time.monotonic()
        self.data = {"schema_version": 1, **identity, "status": "running", "failure_stage": None, "observations": [],
                     "checks": [], "timing": [], "artifacts": [], "issues": [], "qualkit_contract_double": True}

    def record(self, name, value):
        value = _plain(value)
        self.data["observations"].append({"name": name, "value": value})
        if name not in _RESERVED:
            previous = self.data.get(name)
            both = isinstance(previous, dict) and isinstance(value, dict)
            self.data[name] = {**previous, **value} if both else value

    def finish(self, status, failure=""):
        self.data["status"] = status
        if failure:
            self.data["failure"] = {"message": failure[:32768]}
            self.data["failure_stage"] = self.data["failure_stage"] or self.stage
        self.data["duration_seconds"] = time.monotonic() - self.started
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / "evidence.json").write_text(json.dumps(self.data, ensure_ascii=False, indent=2) + "\n")
        (self.directory / "report.html").write_text(
            f"<!doctype html><title>{self.data['case']}</title><p>{status} (qualkit contract double)</p>\n")


def record_evidence(name, value):
    recorder = _ACTIVE.get()
    if recorder is not None:
        recorder.record(name, value)
    return value


@contextmanager
def evidence_stage(name):
    recorder = _ACTIVE.get()
    if recorder is None:
        yield
        return
    previous, started, status = recorder.stage, time.monotonic(), "passed"
    recorder.stage = name
    try:
        yield
    except BaseException:
        status = "failed"
        recorder.data["failure_stage"] = name
        raise
    finally:
        recorder.data["timing"].append({"stage": name, "seconds": time.monotonic() - started, "status": status})
        recorder.stage = previous


@pytest.fixture(autouse=True)
def _capture_e2e_evidence(request):
    root = os.environ.get("TRTMC_E2E_ARTIFACT_DIR")
    name = getattr(request.node, "originalname", "") or ""
    params = getattr(getattr(request.node, "callspec", None), "params", {})
    if not root or not re.fullmatch(r"test_.*e2e", name) or "case_name" not in params:
        yield
        return
    repository = Path(str(request.config.rootpath)).resolve()
    try:
        family = Path(str(request.node.path)).resolve().relative_to(repository / "families").parts[0]
    except ValueError:
        yield
        return
    case = str(params["case_name"])
    requested = {v.strip() for raw in request.config.getoption("--e2e-testcase", default=[]) or []
                 for v in str(raw).split(",") if v.strip()}
    if requested and case not in requested:
        yield
        return
    if not _SAFE_NAME.fullmatch(family) or not _SAFE_NAME.fullmatch(case):
        raise ValueError("evidence family and case must be safe path components")
    recorder = Evidence(Path(root) / "evidence" / family / case, family=family, case=case,
                        source_revision=_revision(repository), nodeid=request.node.nodeid)
    request.node._trtmc_evidence = recorder
    token = _ACTIVE.set(recorder)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"_trtmc_{report.when}_report", report)
    recorder = getattr(item, "_trtmc_evidence", None)
    if recorder is None or report.when != "teardown":
        return
    reports = [getattr(item, f"_trtmc_{when}_report", None) for when in ("setup", "call", "teardown")]
    failures = [r for r in reports if r is not None and r.failed]
    status = ("error" if any(r.when != "call" for r in failures) else "failed" if failures
              else "skipped" if any(r is not None and r.skipped for r in reports) else "passed")
    if status == "skipped" and not recorder.data["observations"]:
        return
    if failures and recorder.data["failure_stage"] is None:
        recorder.data["failure_stage"] = failures[0].when
    recorder.finish(status, "\n".join(str(r.longrepr) for r in failures))
