"""The CI budget of the campaign over every command and public function that reads a model (issue 14): a
fixed-seed run of mutants of valid models — onegraph's own builds among them — through supervised runner
processes. Zero crashes of the caller, hangs, tracebacks, internal errors, memory exhaustion, modified inputs and
reads outside the model's folder; every target sees mutants, and some get through to real work."""

from __future__ import annotations

import pytest

from onegraph.campaign.supervisor import FAILURES, run
from onegraph.campaign.targets import TARGETS

CASES = 420  # 12 per target, ~30 s on 2 cores (bench/fuzz.py runs 10,000)
SEED = 20261201


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return run(CASES, seed=SEED, runners=2, timeout=180, workdir=tmp_path_factory.mktemp("campaign"),
               keep=tmp_path_factory.mktemp("reproducers"))


def test_no_promise_is_broken(report):
    print(f"\n{report}")
    broken = [f for f in report.failures if f.outcome in FAILURES]
    assert not broken, "\n".join(map(str, broken[:10]))


def test_every_target_ran_and_some_mutants_reached_real_work(report):
    assert report.cases == CASES and sum(report.outcomes.values()) == CASES
    assert set(report.by_target) == set(TARGETS)
    assert report.outcomes["ok"] >= CASES // 10 and report.outcomes["refused"] >= CASES // 3
    assert report.canaries_watched  # the reads-outside check is real on this machine (inotify)
