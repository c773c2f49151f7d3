"""``onegraph check`` and the readers on the command line: exit codes 0 / 1 / 2, JSON reports, one-line
errors naming the finding for score / show on a malformed file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import cli_run

CORPUS = Path(__file__).parent / "data" / "malformed"
DATA = Path(__file__).parent / "data"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The command line, in this process (tests/cli_run.py)."""
    return cli_run.run(*args, cwd=cwd)


def test_clean_model_exits_0(cli):
    result = cli("check", str(CORPUS / "valid.onnx"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "clean" in result.stdout and "exit code 0" in result.stdout


def test_findings_exit_1_with_codes_in_json():
    result = run("check", str(CORPUS / "gemm-garbage-attributes.onnx"), "--json")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["exit_code"] == 1 and report["status"] == "checked"
    codes = {f["code"] for f in report["findings"]}
    assert {"C311", "C312"} <= codes
    first = next(f for f in report["findings"] if f["code"] == "C311")
    assert first["node"] and first["field"].startswith("graph.node[0].attribute[") and first["severity"] == "error"
    assert report["limits"]["memory"] == 4 << 30 and "memory" in report["limits"]["enforced"]


def test_unreadable_model_exits_2(cli, tmp_path):
    result = cli("check", str(tmp_path / "absent.onnx"))
    assert result.returncode == 2 and "C901" in result.stdout


def test_limits_and_stages_options(cli):
    result = cli("check", str(CORPUS / "valid.onnx"), "--limits", "memory=1G,cpu=5,wall=30", "--stages",
                 "parse,static", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["stages"] == {"parse": "ok", "static": "ok"} and report["limits"]["memory"] == 1 << 30
    # options it cannot use: the model could not be checked (2), not "has findings" (1)
    result = cli("check", str(CORPUS / "valid.onnx"), "--limits", "memory=lots")
    assert result.returncode == 2 and result.stderr.startswith("error: limit memory='lots'")
    result = cli("check", str(CORPUS / "valid.onnx"), "--stages", "parse,lint")
    assert result.returncode == 2 and result.stderr.startswith("error: unknown check stage(s) ['lint']")
    result = cli("check", str(CORPUS / "valid.onnx"), "--stages", "")  # was "unknown check stage(s) []"
    assert result.returncode == 2 and result.stderr.startswith("error: no check stage given"), result.stderr


def test_exhausted_limits_name_their_stage(cli):
    """The user's report: --limits wall=0.001 printed the same C005 line several times. Each stage after a
    timeout runs again in a fresh process and may time out too: each line names its stage."""
    result = cli("check", str(CORPUS / "valid.onnx"), "--limits", "wall=0.001", "--json")
    assert result.returncode == 1
    findings = json.loads(result.stdout)["findings"]
    assert findings and all(f["code"] == "C005" for f in findings)
    stages = [f["stage"] for f in findings]
    assert len(stages) == len(set(stages))
    result = cli("check", str(CORPUS / "valid.onnx"), "--limits", "wall=0.001")
    lines = [line for line in result.stdout.splitlines() if "C005" in line]
    assert lines and len(lines) == len(set(lines))
    assert all(" stage)" in line or "(before any stage)" in line for line in lines)


def test_score_and_show_refuse_a_malformed_model_in_one_line(cli, tmp_path):
    result = cli("score", str(CORPUS / "imputer-no-input.onnx"), str(DATA / "cars.csv"), "-o", str(tmp_path / "s.csv"))
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "C301" in result.stderr and "Traceback" not in result.stderr
    result = cli("show", str(CORPUS / "truncated.onnx"))
    assert result.returncode == 1 and "is not a valid ONNX model" in result.stderr
    # not a model at all: --trusted would not help, so the hint does not offer it
    assert "complete .onnx file" in result.stderr and "--trusted" not in result.stderr
