# qualkit's stand-in for the root conftest.py of a TRTMC checkout in the families layout.
# Documentation only: qualkit's contract double plays pytest and never runs this file.
# It records the three explicit E2E selectors the families layout's root conftest adds;
# without one of them the direct E2E case skips itself.


def pytest_addoption(parser):
    group = parser.getgroup("e2e", "explicit E2E selection (qualkit stand-in)")
    group.addoption("--e2e-model", action="append", default=[], help="run the E2E cases of this model")
    group.addoption("--e2e-testcase", action="append", default=[], help="run this E2E testcase")
    group.addoption("--e2e-models-file", default=None, help="run the E2E cases of the models listed in this file")
