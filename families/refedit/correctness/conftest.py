"""Options of the refedit correctness case.

Like TRTMC's e2e case, a missing requirement (binary, bundle) is a pytest skip with the
reason; the harness counts any skip as a failure. Leaving an option out entirely is a
usage error.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
# The case imports its siblings (reference, cases, metrics) under any --import-mode.
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
E2E_FILE = "test_refedit_e2e.py"
REQUIRED = ("--refedit-binary", "--bundle", "--artifacts-dir")


def pytest_addoption(parser):
    group = parser.getgroup("refedit", "refedit correctness case")
    group.addoption("--refedit-binary", metavar="PATH", help="the refedit binary under test (required)")
    group.addoption("--bundle", metavar="PATH", help="the bundle built by `refedit build` (required)")
    group.addoption("--artifacts-dir", metavar="DIR", help="where inputs, outputs and result.json go (required)")
    group.addoption(
        "--thresholds",
        metavar="PATH",
        default=str(HERE / "thresholds.json"),
        help="gates (default: thresholds.json beside this file)",
    )


def pytest_collection_modifyitems(config, items):
    # Required only for the e2e case, so the selftest below this folder runs without them.
    if not any(item.path.name == E2E_FILE for item in items):
        return
    missing = [opt for opt in REQUIRED if not config.getoption(opt.lstrip("-").replace("-", "_"))]
    if missing:
        raise pytest.UsageError(f"{E2E_FILE} needs {', '.join(missing)}")


@pytest.fixture
def refedit_binary(pytestconfig) -> Path:
    path = Path(pytestconfig.getoption("refedit_binary"))
    if not path.is_file():
        pytest.skip(f"refedit binary {path} is missing: build it with `go build -o {path} ./families/refedit/cmd/refedit`")
    if not os.access(path, os.X_OK):
        pytest.skip(f"refedit binary {path} is not executable")
    return path.resolve()


@pytest.fixture
def bundle(pytestconfig) -> Path:
    path = Path(pytestconfig.getoption("bundle"))
    if not path.is_file():
        pytest.skip(f"bundle {path} is missing: make it with `refedit build -o {path}`")
    return path.resolve()


@pytest.fixture
def artifacts_dir(pytestconfig) -> Path:
    path = Path(pytestconfig.getoption("artifacts_dir"))
    path.mkdir(parents=True, exist_ok=True)
    return path.resolve()


@pytest.fixture
def thresholds_path(pytestconfig) -> Path:
    path = Path(pytestconfig.getoption("thresholds"))
    if not path.is_file():
        pytest.skip(f"thresholds file {path} is missing")
    return path.resolve()
