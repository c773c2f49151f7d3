"""The CI fuzz budget: 2,000 mutants of valid models, each checked in the checking processes; every one
gets a report and the test process (the caller) survives. Mutants the checker passes are then opened
in-process through onegraph's loader, which must either work or raise an OnegraphError."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import onegraph
from onegraph.check import fuzz
from onegraph.errors import OnegraphError

BUDGET = 2000
SEED = 20240617


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "weights.bin").write_bytes(np.arange(6, dtype=np.float32).tobytes())
    return fuzz.campaign(BUDGET, seed=SEED, workers=2, folder=folder, keep_reports=True)


def test_every_mutant_gets_a_report(result):
    assert result.cases == len(result.reports) == BUDGET
    assert all(r.checked for r in result.reports), [str(r) for r in result.reports if not r.checked][:3]
    assert all(r.model.startswith("case ") for r in result.reports)
    print(f"\n{BUDGET} mutants in {result.seconds:.1f} s ({result.rate:.0f}/s); clean {result.clean}; "
          f"contained {len(result.contained)}; codes {dict(result.codes.most_common())}")


def test_mutations_reach_beyond_the_parser(result):
    """Most mutants parse, and the findings spread over the static, checker and runtime stages."""
    stages = collections.Counter(f.stage for r in result.reports for f in r.findings)
    assert result.codes["C001"] < BUDGET / 2
    assert stages["static"] > 300 and stages["checker"] > 100 and stages["runtime"] > 100, stages
    assert len([c for c in result.codes if c[1] in "1234"]) >= 20  # distinct static codes hit
    assert result.clean > 0


def test_loader_survives_the_mutants_the_checker_passes(result):
    data = dict(fuzz.cases(BUDGET, seed=SEED))
    passed = [r.model for r in result.reports if not r.errors][:150]
    assert len(passed) >= 50
    opened = 0
    for label in passed:
        try:
            onegraph.Session(data[label])
            opened += 1
        except OnegraphError:
            pass  # refused with an error naming why: fine; a crash would have ended this test process
    assert opened > 0
