"""qualkit's stand-in for the root conftest.py of TRTMC main e9132e79, not TRTMC's: the e2e
options it registers (conftest.py:5-67 @ e9132e79). Real pytest loads it."""


def pytest_addoption(parser):
    group = parser.getgroup("e2e", "TRTMC end-to-end model tests")
    group.addoption("--engine-dir", default=None, help="folder holding the prebuilt <bundle>")
    group.addoption("--trtmc-binary", default="build/trtmc", help="the trtmc CLI")
    group.addoption("--hf-python", default=None, help="the interpreter of the HF reference")
    group.addoption("--model-plugin-dir", default=None, help="where the model plugins are")
    group.addoption("--rebuild-engines", action="store_true", default=False, help="rebuild the bundle inside the case")
    group.addoption("--e2e-model", action="append", default=[], help="run the cases of this model")
    group.addoption("--e2e-testcase", action="append", default=[], help="run this testcase")
    group.addoption("--e2e-artifacts-dir", default=None, help="where each case writes <case>/result.json")
