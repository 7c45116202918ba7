"""qualkit's TRTMC-shaped tree: TRTMC e9132e79's root conftest.py registers the e2e
options (--engine-dir, --trtmc-binary, --hf-python, --model-plugin-dir, --rebuild-engines,
--e2e-model, --e2e-testcase, --e2e-artifacts-dir, ...). Documentation only; never run.
"""
