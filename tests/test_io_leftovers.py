"""Issue 14, kind 7: a writer killed during an atomic write leaves ``.NAME.XXXXXXXX.tmp``; the next write to
NAME removes the stale ones of its own pattern, never a live writer's file in progress (it holds a flock).

The writers are real subprocesses writing a large file chunk by chunk through ``onegraph.io.atomic_path``,
killed with SIGKILL mid-write (nothing of Python's runs after it: no ``finally``, no atexit)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import onegraph
from onegraph import io

pytest.importorskip("fcntl")

#: a writer that never finishes: 1 MiB chunks until killed, so the test kills it mid-write
WRITER = """
import sys, time
from onegraph.io import atomic_path
with atomic_path(sys.argv[1]) as tmp:
    with open(tmp, "wb") as f:
        chunk = b"\\x00" * (1 << 20)
        while True:
            f.write(chunk)
            f.flush()
            time.sleep(0.01)
"""


def _start_writer(target: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(target)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def _temporary_of(target: Path, proc: subprocess.Popen, size: int = 16 << 20, timeout: float = 60,
                  besides: tuple[Path, ...] = ()) -> Path:
    """The writer's temporary file (not one of ``besides``), once it holds at least ``size`` bytes."""
    deadline = time.monotonic() + timeout
    pattern = io._temporaries(target)
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode()
        for p in target.parent.iterdir():
            if pattern.fullmatch(p.name) and p not in besides and p.stat().st_size >= size:
                return p
        time.sleep(0.02)
    raise AssertionError("the writer never wrote")


def _age(path: Path, seconds: float) -> None:
    """Make ``path`` look unchanged for ``seconds`` (instead of waiting STALE_AFTER in a test)."""
    past = time.time() - seconds
    os.utime(path, (past, past))


def test_a_killed_writer_leaves_the_old_file_and_the_next_write_removes_its_leftover(tmp_path):
    """Kind 7: before, each kill -9 left one more ``.model.onnx.*.tmp`` (large: what it had written) for ever."""
    target = tmp_path / "model.onnx"
    target.write_bytes(b"the old model")
    victim = _start_writer(target)
    leftover = _temporary_of(target, victim)
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    assert victim.returncode == -signal.SIGKILL
    assert target.read_bytes() == b"the old model"  # the old output is intact
    assert leftover.exists() and leftover.stat().st_size >= 16 << 20

    # a leftover younger than STALE_AFTER stays (it could be a writer between creating and locking its file)
    io.write_bytes(target, b"model 2")
    assert leftover.exists()

    # a live writer's file in progress, as old as the leftover: locked, so kept
    live = _start_writer(target)
    try:
        in_progress = _temporary_of(target, live, size=1 << 20, besides=(leftover,))
        # files of other names and patterns next to it are never touched
        other = tmp_path / ".other.onnx.abcdefgh.tmp"
        other.write_bytes(b"another target's leftover")
        lookalike = tmp_path / ".model.onnx.backup.tmp"
        lookalike.write_bytes(b"not a temporary of atomic_path")
        folder = tmp_path / ".model.onnx.12345678.tmp"
        folder.mkdir()
        for p in (leftover, in_progress, other, lookalike, folder):
            _age(p, 2 * io.STALE_AFTER)

        io.write_bytes(target, b"model 3")
        assert target.read_bytes() == b"model 3"
        assert not leftover.exists()  # the dead writer's, removed
        assert in_progress.exists()  # the live writer's, kept
        assert other.exists() and lookalike.exists() and folder.is_dir()
        assert live.poll() is None  # and the live writer still writes
    finally:
        live.kill()
        live.wait(timeout=30)


def test_removal_needs_the_lock_and_the_age(tmp_path):
    """remove_stale_temporaries on its own: an unlocked old file goes; a locked old one and a fresh one stay."""
    import fcntl

    target = tmp_path / "scores.csv"
    old, fresh, held = (tmp_path / f".scores.csv.{k}.tmp" for k in ("aaaaaaaa", "bbbbbbbb", "cccccccc"))
    for p in (old, fresh, held):
        p.write_bytes(b"x")
    _age(old, io.STALE_AFTER + 1)
    _age(held, io.STALE_AFTER + 1)
    fd = os.open(held, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another open file description: as another process's lock
    try:
        assert io.remove_stale_temporaries(target) == [old]
    finally:
        os.close(fd)
    assert fresh.exists() and held.exists() and not old.exists()


# -- every command that writes a model refuses, in one line and before writing, a path it cannot use -------
def _model_commands(model, data):
    """(command line with OUT for the output) per command that writes a model."""
    return [
        ["quickstart", "-o", "OUT"],
        ["build", str(data), "--target", "species", "-o", "OUT"],
        ["fuse", str(model), "-o", "OUT"],
        ["convert", str(model), "--opset", "18", "-o", "OUT"],
        ["compose", str(model), str(model), "--name", "a", "--name", "b", "-o", "OUT"],
        ["functions", "inline", str(model), "-o", "OUT"],
        ["stats", "calibrate", str(model), "--data", str(data), "-o", "OUT"],
        ["stats", "strip", str(model), "-o", "OUT"],
        ["meta", "set", str(model), "description=x", "-o", "OUT"],
    ]


def _commands():
    """(command words, click command) of every command of the command line."""
    import typer.main

    from onegraph.cli import load_commands

    def walk(command, words=()):
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                yield from walk(sub, (*words, name))
        else:
            yield words, command

    return list(walk(typer.main.get_command(load_commands())))


def test_every_command_that_writes_is_guarded_at_the_boundary():
    """The promise lives in one place: each command with an ``-o/--output`` goes through
    :func:`onegraph.cli.base.writes`, which checks the output against the command's inputs and its kind."""
    writing = {" ".join(words): getattr(c.callback, "writes", None) for words, c in _commands()
               if "output" in [p.name for p in c.params]}
    assert writing and all(writing.values()), writing
    assert set(writing) == {" ".join(args[:2] if args[0] in GROUPS else args[:1]) for args in _in_place("M", "D")}


GROUPS = {"functions", "meta", "stats", "fed"}


def _in_place(model: str, data: str, delta: str = "X") -> list[list[str]]:
    """Per command that writes: a command line whose output is one of its inputs (``model``, ``data``,
    ``delta``), marked ``@``."""
    return [
        ["quickstart", "-o", "@" + data],
        ["build", data, "--target", "species", "-o", "@" + data],
        ["score", model, data, "-o", "@" + data],
        ["fuse", model, "-o", "@" + model],
        ["convert", model, "--opset", "18", "-o", "@" + model],
        ["compose", model, model, "--name", "a", "--name", "b", "-o", "@" + model],
        ["functions", "group", model, "--by", "scope", "-o", "@" + model],
        ["functions", "inline", model, "-o", "@" + model],
        ["meta", "set", model, "description=x", "-o", "@" + model],
        ["stats", "calibrate", model, "--data", data, "-o", "@" + model],
        ["stats", "recover", model, "-o", "@" + model],
        ["stats", "strip", model, "-o", "@" + model],
        ["fed", "params", model, "--select", "x", "-o", "@" + model],
        ["fed", "delta", model, delta, "--samples", "5", "-o", "@" + delta],
        ["fed", "apply", model, delta, "-o", "@" + delta],
        ["fed", "average", model, delta, "-o", "@" + model],
    ]


def test_no_command_writes_over_one_of_its_inputs(cli, penguins_onnx, penguins, tmp_path):
    """The user's report: ``fed apply BASE D -o D`` replaced the delta D with a model, ``fed delta L B -o L``
    the model L with a delta, ``meta set M -o M`` and ``fed params M -o M`` changed M (the other commands
    refused it). Now every command refuses, in one line, before reading anything; the file is unchanged.
    (quickstart's -o is compared with nothing it reads: the bundled table is not a file given to it.)"""
    model, data, delta = tmp_path / "m.onnx", tmp_path / "rows.csv", tmp_path / "d.safetensors"
    model.write_bytes(penguins_onnx.read_bytes())
    penguins.to_csv(data, index=False)
    delta.write_bytes(b"not read: refused before")
    before = {p: p.read_bytes() for p in (model, data, delta)}
    for args in _in_place(str(model), str(data), str(delta))[1:]:
        result = cli(*[a.lstrip("@") for a in args])
        target = next(a for a in args if a.startswith("@")).lstrip("@")
        assert result.returncode == 1, (args, result.stdout, result.stderr)
        said = (f"error: cannot write {target}: it is the input {target}, which would be replaced. write the "
                "output to another file")
        assert result.stderr.strip().startswith(said) and result.stderr.count("\n") == 1, (args, result.stderr)
        assert {p: p.read_bytes() for p in before} == before, args


def test_a_delta_is_not_written_under_a_model_name_nor_a_model_under_a_delta_name(cli, penguins_onnx, tmp_path):
    result = cli("fed", "delta", str(penguins_onnx), str(penguins_onnx), "--samples", "5", "-o",
                 str(tmp_path / "d.onnx"))
    assert result.returncode == 1 and "cannot write a delta to" in result.stderr and ".safetensors" in result.stderr
    result = cli("fed", "apply", str(penguins_onnx), str(tmp_path / "d.safetensors"), "-o",
                 str(tmp_path / "m.safetensors"))
    assert result.returncode == 1 and "names a delta file" in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("where,message", [
    ("model.csv", "names a table file"),
    ("/proc/onegraph-test/model.onnx", "does not exist"),
    ("/proc/model.onnx", "cannot write /proc/model.onnx"),
])
def test_every_model_writing_command_refuses_an_unusable_output(cli, penguins_onnx, penguins, tmp_path, where,
                                                                 message):
    data = tmp_path / "penguins.csv"
    penguins.to_csv(data, index=False)
    target = where if where.startswith("/") else str(tmp_path / where)
    before = sorted(p.name for p in tmp_path.iterdir())
    for args in _model_commands(penguins_onnx, data):
        result = cli(*[target if a == "OUT" else a for a in args])
        lines = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith("note:")]
        assert result.returncode == 1, (args, result.stderr)
        assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], (args, result.stderr)
        assert sorted(p.name for p in tmp_path.iterdir()) == before, args  # nothing written, no temporary left


def test_build_refuses_an_unwritable_folder_before_fitting(cli, penguins, tmp_path, monkeypatch):
    """The probe runs before the data is read: a build that would fail at the end fails at once."""
    import onegraph.io

    data = tmp_path / "penguins.csv"
    penguins.to_csv(data, index=False)
    read = []
    monkeypatch.setattr(onegraph.io, "read_table", lambda *a, **k: read.append(a) or penguins)
    result = cli("build", str(data), "--target", "species", "-o", "/proc/model.onnx")
    assert result.returncode == 1 and "cannot write /proc/model.onnx" in result.stderr
    assert read == []


def test_the_python_api_refuses_a_table_suffix_for_a_model(penguins, tmp_path):
    from sklearn.linear_model import LinearRegression

    import onegraph
    from onegraph.errors import OnegraphError

    x = penguins.dropna()[["bill_length_mm", "flipper_length_mm"]]
    model = LinearRegression().fit(x, penguins.dropna()["body_mass_g"])
    with pytest.raises(OnegraphError, match="names a table file"):
        onegraph.build(None, model, x, path=tmp_path / "m.parquet")
    with pytest.raises(OnegraphError) as refused:
        onegraph.build(None, model, x, path=tmp_path / "m.onnx.csv")
    assert refused.value.hint.endswith("e.g. m.onnx")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("form", ["csv", "gzip", "quoted newline"])
def test_a_data_line_cut_short_is_refused_naming_it(cli, tmp_path, form):
    """A new user's case: `onegraph score` of a CSV with a line cut short (fewer fields than the header)
    scored it, pandas filling the missing fields with missing values, exit 0 (a longer line it refuses). The
    line is refused, naming it; a line whose last field is empty (a missing value) still reads."""
    import gzip

    import pandas as pd

    from onegraph.errors import DataError

    weather = (Path(__file__).parent / "data" / "seattle-weather.csv").read_text().splitlines()[:4]
    lines = list(weather)
    if form == "quoted newline":  # one row over two lines: the reader counts rows, not lines
        lines.insert(1, '"2011/12/31","0.0\n",1,2,3,"sun"')
    lines.append(",".join(lines[-1].split(",")[:3]))  # cut after temp_max
    text = "\n".join(lines) + "\n"
    path = tmp_path / ("rows.csv.gz" if form == "gzip" else "rows.csv")
    path.write_bytes(gzip.compress(text.encode()) if form == "gzip" else text.encode())
    with pytest.raises(DataError, match=rf"row {len(lines)} \(the header is row 1\) has 3 fields but the header "
                                        "names 6 columns"):
        io.read_table(path)
    complete = tmp_path / "complete.csv"  # the same rows, the last with its last field empty (a missing value)
    complete.write_text("\n".join(lines[:-2] + [",".join(weather[3].split(",")[:5]) + ","]) + "\n")
    assert io.read_table(complete).iloc[-1].isna().sum() == 1 == pd.read_csv(complete).iloc[-1].isna().sum()


def test_a_semicolon_csv_with_decimal_commas_reads_its_numbers(cli, tmp_path):
    """A new user's case: a spreadsheet's CSV export in most of Europe separates fields with ';' and writes
    39,1 for 39.1. The separator was sniffed but the numbers were text: build one-hot encoded every numeric
    column as categories (with a note) and score refused the model's numbers. Such a file is read with
    decimal commas (build says so), and scores as the same rows written with points do; a ';' file whose
    numbers have points, or that holds a point-decimal anywhere, keeps the point."""
    import pandas as pd

    weather = pd.read_csv(Path(__file__).parent / "data" / "seattle-weather.csv")
    points, commas = tmp_path / "points.csv", tmp_path / "commas.csv"
    weather.to_csv(points, index=False)
    weather.to_csv(commas, index=False, sep=";", decimal=",")
    assert io.csv_dialect(commas) == (";", ",") and io.csv_dialect(points) == (",", ".")
    pd.testing.assert_frame_equal(io.read_table(commas), io.read_table(points))
    built = cli("build", str(commas), "--target", "weather", "-o", str(tmp_path / "m.onnx"))
    assert built.returncode == 0, built.stderr
    assert f"note: {commas} is read as semicolon-separated with decimal commas" in built.stderr
    assert "used as categories" not in built.stderr
    kinds = {s.name: s.kind for s in onegraph.Session(tmp_path / "m.onnx").inputs}
    assert kinds["precipitation"] == kinds["wind"] == "float"
    for data in (commas, points):
        assert cli("score", str(tmp_path / "m.onnx"), str(data), "-o", str(tmp_path / f"{data.stem}.out.csv")
                   ).returncode == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "commas.out.csv"), pd.read_csv(tmp_path / "points.out.csv"))
    mixed = tmp_path / "mixed.csv"  # one number written with a point: the file's decimal mark is the point
    mixed.write_text("a;b\n1,5;x\n2.5;y\n")
    assert io.csv_dialect(mixed) == (";", ".")
    assert io.read_table(mixed)["a"].tolist() == ["1,5", "2.5"]
    semicolons = tmp_path / "semicolons.csv"
    weather.head(20).to_csv(semicolons, index=False, sep=";")
    assert io.csv_dialect(semicolons) == (";", ".")
    pd.testing.assert_frame_equal(io.read_table(semicolons), weather.head(20))


def test_a_semicolon_csv_with_thousands_points_reads_its_numbers(cli, european_penguins, tmp_path):
    """A European spreadsheet export writes 3.750 for 3750 beside 39,1 for 39.1. The point-grouped numbers
    counted as point decimals: the file was read with decimal points, so 3.750 was 3.75 and every decimal
    comma column was text, silently. Such a file reads with decimal commas and point thousands (as pandas'
    ``decimal=",", thousands="."`` reads it), and a dd.mm.yyyy date column is left as its text (pandas'
    thousands option would have read 11.11.2007 as the number 11112007)."""
    import pandas as pd

    data, raw = european_penguins
    assert "3.750" in data.read_text() and "39,1" in data.read_text()
    assert io.csv_dialect(data) == (";", ",")
    got = io.read_table(data)
    want = pd.read_csv(data, sep=";", decimal=",", thousands=".", dtype={"Date Egg": str})
    pd.testing.assert_frame_equal(got, want)
    np.testing.assert_array_equal(got["Body Mass (g)"].to_numpy(), raw["Body Mass (g)"].to_numpy())
    assert got["Date Egg"].tolist() == raw["Date Egg"].tolist()
    built = cli("build", str(data), "--target", "Sex", "-o", str(tmp_path / "m.onnx"))
    assert built.returncode == 0, built.stderr
    kinds = {s.name: s.kind for s in onegraph.Session(tmp_path / "m.onnx").inputs}
    assert kinds["Body Mass (g)"] == kinds["Culmen Length (mm)"] == "float"
    # a column that mixes grouped numbers with a point decimal is not numbers: its text is kept, not guessed
    odd = tmp_path / "odd.csv"
    odd.write_text("a;b\n1.250;2,5\n3.14;1,0\n")
    assert io.csv_dialect(odd) == (";", ".")
    both = tmp_path / "both.csv"
    both.write_text("a;b\n1.250;2,5\n2.125.000;1,0\nabout 3;1,5\n")
    assert io.csv_dialect(both) == (";", ",")
    assert io.read_table(both)["a"].tolist() == ["1.250", "2.125.000", "about 3"]
    assert io.read_table(both)["b"].tolist() == [2.5, 1.0, 1.5]


def test_no_command_writes_over_the_external_data_of_a_model_it_reads(cli, tmp_path):
    """The user's report: ``fuse m.onnx -o weights.bin`` (weights.bin: m.onnx's external data) exited 0 and
    replaced the weights with a model; m.onnx then read garbage and ``check`` called it clean. A file known only
    once the model is read is kept as its inputs are: refused in one line, the file unchanged."""
    import onnx
    from conftest import DATA

    model, data, weights = tmp_path / "m.onnx", tmp_path / "x.npz", tmp_path / "weights.bin"
    onnx.save(onnx.load(DATA / "penguins-mlp.onnx"), model, save_as_external_data=True, location=weights.name,
              size_threshold=0)
    np.savez(data, x=np.random.default_rng(0).normal(size=(32, 4)).astype(np.float32))
    before = {p: p.read_bytes() for p in (model, weights)}
    commands = [args for args in _in_place(str(model), str(data)) if "@" + str(model) in args
                and args[0] not in ("compose", "fed") and args[:2] not in (["stats", "recover"],
                                                                           ["functions", "group"])]
    # (the others need what the MLP lacks: a preprocessing to compose, deltas, statistics, scopes)
    assert len(commands) == 6
    for args in commands:
        result = cli(*[str(weights) if a == "@" + str(model) else a for a in args])
        said = (f"error: cannot write {weights}: it is the external data of the input model file {model}, which "
                "would be replaced. write the output to another file")
        assert result.returncode == 1, (args, result.stdout, result.stderr)
        assert result.stderr.strip().splitlines()[-1] == said, (args, result.stderr)  # after any progress bar
        assert {p: p.read_bytes() for p in before} == before, args


def test_zst_without_zstandard_says_what_is_missing(tmp_path, monkeypatch):
    """Reading a .csv.zst without the optional zstandard package pasted pandas' "`Import zstandard` failed..."
    and then advised checking that the file is a valid CSV; it says the package is missing, as writing does."""
    import importlib.util

    from onegraph.errors import DataError
    from onegraph.io import read_table, table_format

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "zstandard" else real(name, *a))
    (tmp_path / "rows.csv.zst").write_bytes(b"(any bytes: refused before they are read)")
    with pytest.raises(DataError, match=r"rows.csv.zst: reading .zst needs the zstandard package") as info:
        read_table(tmp_path / "rows.csv.zst")
    assert "valid CSV" not in str(info.value)
    with pytest.raises(DataError, match=r"out.csv.zst: writing .zst needs the zstandard package"):
        table_format(tmp_path / "out.csv.zst")


def test_a_file_named_as_another_format_is_named_so(tmp_path):
    """A Parquet or gzip file named .csv was refused as "not UTF-8 text" with advice to re-encode it from Latin-1
    (which would corrupt it); a CSV named .parquet got pyarrow's "magic bytes not found". The first bytes say
    what it is; a CSV whose header begins with such letters (PAR1, BZh) is still read as a CSV."""
    import gzip

    import pandas as pd

    from onegraph.errors import DataError
    from onegraph.io import read_table

    frame = pd.DataFrame({"PAR1": [1, 2], "BZh9": ["a", "b"]})
    frame.to_parquet(tmp_path / "parquet.csv")
    (tmp_path / "gzip.csv").write_bytes(gzip.compress(frame.to_csv(index=False).encode()))
    frame.to_csv(tmp_path / "text.parquet", index=False)
    for name, said in (("parquet.csv", "is a Parquet file, not what its name says (.csv). rename it to end in .parquet"),
                       ("gzip.csv", "is gzip-compressed, not what its name says (.csv). rename it to end in .csv.gz"),
                       ("text.parquet", "is named .parquet but is not a Parquet file")):
        with pytest.raises(DataError, match=re.escape(said)):
            read_table(tmp_path / name)
    frame.to_csv(tmp_path / "header.csv", index=False)  # begins "PAR1,BZh9": text
    pd.testing.assert_frame_equal(read_table(tmp_path / "header.csv"), frame)
    # a Parquet file cut short begins as one and does not end as one: said so, not "rename it if it is a CSV"
    (tmp_path / "cut.parquet").write_bytes((tmp_path / "parquet.csv").read_bytes()[:200])
    with pytest.raises(DataError, match="begins as a Parquet file but does not end as one.*cut short"):
        read_table(tmp_path / "cut.parquet")


def test_a_parquet_files_named_index_is_read_as_its_columns(tmp_path):
    """``cars.set_index("Name").to_parquet(path)`` keeps Name as the file's index: the model's column 'Name' was
    "missing from the data". A named index is read as columns again, in the file's row order."""
    import pandas as pd
    from conftest import DATA

    from onegraph.io import read_table

    cars = pd.read_csv(DATA / "cars.csv")
    cars.set_index("Name").to_parquet(tmp_path / "indexed.parquet")
    cars.set_index(["Origin", "Name"]).to_parquet(tmp_path / "two.parquet")
    got = read_table(tmp_path / "indexed.parquet")
    assert got["Name"].tolist() == cars["Name"].tolist() and set(got.columns) == set(cars.columns)
    assert read_table(tmp_path / "two.parquet")[["Origin", "Name"]].equals(cars[["Origin", "Name"]])
    cars.to_parquet(tmp_path / "plain.parquet")  # a RangeIndex: nothing added
    assert list(read_table(tmp_path / "plain.parquet").columns) == list(cars.columns)
