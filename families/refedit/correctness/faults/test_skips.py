"""Negative control for qualkit's correctness gate: a case that skips.

TRTMC's e2e case calls pytest.skip when a requirement such as diffusers is missing, and
pytest then exits 0. qualkit must count that skip as a failure; the refedit adapter runs
this file instead of the real case when a row sets CaseFault = CaseSkips. It is never
part of a qualification.
"""

import pytest


def test_refedit_e2e():
    pytest.skip("diffusers is not installed (negative control: refedit's correctness case skipped on purpose)")
