"""What a campaign runs on each mutant: every command and public function that reads a model.

A target is a command line (run through :func:`onegraph.cli.main` in the runner, as a user's shell would) or a
call of a public function. Placeholders in a command line: ``{model}`` (the mutant, in its own folder),
``{seed}`` (the valid model it came from, a copy in the same folder), ``{data}`` (rows or arrays the model can
take: a CSV for a model onegraph built, a ``.npz`` of generated inputs otherwise), ``{csv}``, ``{delta}`` (a
delta file of the seed) and ``{out}`` (where a command writes; every file a target may write starts with it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["Case", "Target", "TARGETS"]


@dataclasses.dataclass(frozen=True)
class Case:
    """The files of one case (all in ``folder``, but the data files the campaign shares)."""

    folder: Path
    model: Path
    seed: Path
    data: Path
    csv: Path
    delta: Path

    @property
    def out(self) -> Path:
        return self.folder / "out"

    def fill(self, word: str) -> str:
        return word.format(model=self.model, seed=self.seed, data=self.data, csv=self.csv, delta=self.delta,
                           out=self.out)


@dataclasses.dataclass(frozen=True)
class Target:
    """A command line (``argv``) or a function of a :class:`Case` (``call``)."""

    name: str
    argv: tuple[str, ...] = ()
    call: Callable[[Case], Any] | None = None


def _cli(name: str, *argv: str) -> Target:
    return Target(name, argv=argv)


def _score(case: Case) -> Any:
    import pandas as pd

    import onegraph

    return onegraph.score(case.model, pd.read_csv(case.csv))


def _session(case: Case) -> Any:
    import onegraph

    return onegraph.Session(case.model).input_names


def _describe(case: Case) -> Any:
    from onegraph.inspect import describe

    return describe(case.model)


def _read_metadata(case: Case) -> Any:
    from onegraph.meta import read_metadata

    return read_metadata(case.model)


def _calibrate(case: Case) -> Any:
    from onegraph.stats import calibrate

    return calibrate(case.model, case.data, progress=False)


def _read_stats(case: Case) -> Any:
    from onegraph.stats import read_qparams, read_stats

    return read_stats(case.model), read_qparams(case.model)


def _convert_opset(case: Case) -> Any:
    from onegraph.convert import convert_opset

    return convert_opset(case.model, 13, rows=4)


def _convert_float16(case: Case) -> Any:
    from onegraph.convert import convert_float16

    return convert_float16(case.model, rows=4)


def _compare(case: Case) -> Any:
    from onegraph.verify import compare_runtimes

    return compare_runtimes(case.model, rows=4)


def _functions(case: Case) -> Any:
    from onegraph import passes
    from onegraph.check.loader import load_ir

    model = load_ir(case.model)
    passes.group_functions(model)
    passes.inline(model)
    return passes.fuse(model)


def _parameters(case: Case) -> Any:
    from onegraph import federated

    return federated.list_parameters(case.model)


def _check(case: Case) -> Any:
    from onegraph.check import check

    return check(case.model).exit_code


TARGETS: dict[str, Target] = {t.name: t for t in [
    _cli("check", "check", "{model}"),
    _cli("check --json", "check", "{model}", "--json"),
    _cli("show", "show", "{model}"),
    _cli("show --json", "show", "{model}", "--json"),
    _cli("score", "score", "{model}", "{csv}", "-o", "{out}.csv"),
    _cli("stats calibrate", "stats", "calibrate", "{model}", "--data", "{data}", "-o", "{out}.onnx"),
    _cli("stats show", "stats", "show", "{model}"),
    _cli("stats recover", "stats", "recover", "{model}", "-o", "{out}.onnx"),
    _cli("stats strip", "stats", "strip", "{model}", "-o", "{out}.onnx"),
    _cli("convert --opset", "convert", "{model}", "--opset", "13", "--rows", "4", "-o", "{out}.onnx"),
    _cli("convert --fp16", "convert", "{model}", "--fp16", "--rows", "4", "-o", "{out}.onnx"),
    _cli("functions list", "functions", "list", "{model}", "--nodes"),
    _cli("functions group", "functions", "group", "{model}", "-o", "{out}.onnx"),
    _cli("functions inline", "functions", "inline", "{model}", "-o", "{out}.onnx"),
    _cli("fuse", "fuse", "{model}", "-o", "{out}.onnx"),
    _cli("compare", "compare", "{model}", "--rows", "4"),
    _cli("meta show", "meta", "show", "{model}"),
    _cli("meta set", "meta", "set", "{model}", "author=fuzz", 'lineage={{"parent": 1}}', "-o", "{out}.onnx"),
    _cli("meta validate", "meta", "validate", "{model}"),
    _cli("meta diff", "meta", "diff", "{model}", "{seed}"),
    _cli("fed params", "fed", "params", "{model}", "--json"),
    _cli("fed delta", "fed", "delta", "{model}", "{seed}", "-o", "{out}.safetensors"),
    _cli("fed average", "fed", "average", "{model}", "{delta}", "-o", "{out}.onnx"),
    Target("onegraph.score", call=_score),
    Target("onegraph.Session", call=_session),
    Target("describe", call=_describe),
    Target("read_metadata", call=_read_metadata),
    Target("stats.calibrate", call=_calibrate),
    Target("stats.read_stats", call=_read_stats),
    Target("convert_opset", call=_convert_opset),
    Target("convert_float16", call=_convert_float16),
    Target("compare_runtimes", call=_compare),
    Target("passes group/inline/fuse", call=_functions),
    Target("federated.list_parameters", call=_parameters),
    Target("onegraph.check.check", call=_check),
]}
