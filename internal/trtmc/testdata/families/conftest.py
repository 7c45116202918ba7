"""qualkit's stand-in for the root conftest.py of a TRTMC checkout in the families layout,
not TRTMC's: the three explicit E2E selectors it adds to pytest, and the evidence plugin
it loads (pytest_plugins = ("tools.e2e_evidence",), as the newest stored families-layout
root conftest.py does; the index names no commit for that version). Real pytest loads
it; without one of the selectors the direct E2E case skips itself (test_e2e.py)."""

pytest_plugins = ("tools.e2e_evidence",)


def pytest_addoption(parser):
    group = parser.getgroup("e2e", "explicit E2E selection")
    group.addoption("--e2e-model", action="append", default=[], help="run the E2E cases of this model (or family)")
    group.addoption("--e2e-testcase", action="append", default=[], help="run this E2E testcase")
    group.addoption("--e2e-models-file", default=None, help="run the E2E cases of the models listed in this file")
