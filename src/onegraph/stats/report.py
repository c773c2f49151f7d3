"""Reports of tensor statistics: an HTML page with a histogram per tensor (PNG, matplotlib) and rich tables.

:func:`write_html` writes ``index.html`` and ``hist/<n>-<tensor>.png`` into a folder (each file atomically);
:func:`summary_tables` gives the terminal tables (widest ranges, tensors with NaN / inf, tensors with the
most values beyond Tukey's outer fences); :func:`tensor_table` lists every tensor a model carries.
"""

from __future__ import annotations

import html
import io
import math
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from rich import box
from rich.table import Table

from onegraph.io import write_bytes
from onegraph.stats.accumulators import TensorStats
from onegraph.stats.qparams import QuantParams

__all__ = ["summary_tables", "tensor_table", "write_html"]


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    if x == 0 or 1e-3 <= abs(x) < 1e5:
        return f"{x:.4g}"
    return f"{x:.3e}"


def _outlier_share(s: TensorStats, key: str = "tukey_3") -> float:
    o = s.outliers.get(key)
    return o.count / s.count if o is not None and s.count else 0.0


def _nonfinite(s: TensorStats) -> int:
    return s.nan + s.posinf + s.neginf


def summary_tables(stats: Mapping[str, TensorStats], top: int = 10) -> list[Table]:
    """Rich tables: the ``top`` widest ranges, every tensor holding NaN / inf, the ``top`` tensors with the
    largest share of values beyond Tukey's outer fences (Q1 - 3 IQR, Q3 + 3 IQR)."""
    ranged = [(n, s) for n, s in stats.items() if s.min is not None]
    widest = sorted(ranged, key=lambda t: t[1].max - t[1].min, reverse=True)[:top]
    table = Table(title=f"widest ranges (top {min(top, len(widest))} of {len(stats)} tensors)", title_justify="left")
    for col in ("tensor", "dtype", "min", "max", "mean", "std", "p0.01%", "p99.99%"):
        table.add_column(col, justify="left" if col in ("tensor", "dtype") else "right")
    for n, s in widest:
        table.add_row(n, s.dtype or "", _fmt(s.min), _fmt(s.max), _fmt(s.mean), _fmt(s.std),
                      _fmt(s.quantiles.get(0.0001)), _fmt(s.quantiles.get(0.9999)))
    tables = [table]
    bad = [(n, s) for n, s in stats.items() if _nonfinite(s)]
    table = Table(title=f"NaN / inf ({len(bad)} tensors)", title_justify="left")
    for col in ("tensor", "values", "NaN", "+inf", "-inf"):
        table.add_column(col, justify="left" if col == "tensor" else "right")
    for n, s in sorted(bad, key=lambda t: _nonfinite(t[1]), reverse=True):
        table.add_row(n, f"{s.size:,}", f"{s.nan:,}", f"{s.posinf:,}", f"{s.neginf:,}")
    if not bad:
        table.add_row("(none)", "", "", "", "")
    tables.append(table)
    heavy = sorted((t for t in ranged if _outlier_share(t[1]) > 0), key=lambda t: _outlier_share(t[1]),
                   reverse=True)[:top]
    table = Table(title="outlier-heavy tensors (beyond Q1 - 3 IQR / Q3 + 3 IQR)", title_justify="left")
    for col in ("tensor", "outliers", "share", "beyond 1.5 IQR", "beyond 3 std", "fences"):
        table.add_column(col, justify="left" if col in ("tensor", "fences") else "right")
    for n, s in heavy:
        o = s.outliers["tukey_3"]
        std = next((v for k, v in s.outliers.items() if k.startswith("std_")), None)
        table.add_row(n, f"{o.count:,.0f}", f"{_outlier_share(s):.3%}", f"{s.outliers['tukey_1.5'].count:,.0f}",
                      f"{std.count:,.0f}" if std else "-", f"[{_fmt(o.low)}, {_fmt(o.high)}]")
    if not heavy:
        table.add_row("(none)", "", "", "", "", "")
    tables.append(table)
    return tables


def tensor_table(stats: Mapping[str, TensorStats], qparams: Mapping[str, QuantParams] | None = None,
                 title: str = "tensor statistics") -> Table:
    """One row per tensor: source, type, samples, range, mean / std, non-finite count, quantization."""
    qparams = qparams or {}
    sources = {s.source for s in stats.values()}
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    columns = ["tensor"] + (["source"] if len(sources) > 1 else []) + [
        "dtype", "min", "max", "mean", "std", "NaN/inf", "quantization"]
    for col in columns:
        if col == "tensor":
            table.add_column(col, overflow="fold", min_width=12)
        else:
            left = col in ("source", "dtype", "quantization")
            table.add_column(col, no_wrap=True, justify="left" if left else "right")
    for n in dict.fromkeys([*stats, *qparams]):
        s = stats.get(n, TensorStats(source="-"))
        row = [n] + ([s.source] if len(sources) > 1 else []) + [
            s.dtype or "", _fmt(s.min), _fmt(s.max), _fmt(s.mean), _fmt(s.std), f"{_nonfinite(s):,}" if s.size else "",
            _quant_text(qparams.get(n))]
        table.add_row(*row)
    return table


def _quant_text(q: QuantParams | None) -> str:
    """``uint8 0.0157/128`` (scale / zero point), ``int8 16 scales`` per channel."""
    if q is None:
        return ""
    scale, zero = np.asarray(q.scale), np.asarray(q.zero_point)
    if scale.ndim:
        return f"{q.quant_type} x{scale.size}"
    text = f"{q.quant_type} {_fmt(float(scale))}"
    return text if q.quant_type.startswith("float8") else f"{text}/{int(zero.astype(np.int64))}"


# -- HTML ---------------------------------------------------------------------------------------
def _png(name: str, s: TensorStats) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 2.6), dpi=80)
    ax = fig.add_subplot()
    h = s.histogram
    counts = np.asarray(h.counts, dtype=np.float64)
    edges = h.edges
    step = max(1, math.ceil(len(counts) / 128))  # at most 128 bars; sums of neighbours stay exact
    pad = (-len(counts)) % step
    counts = np.concatenate([counts, np.zeros(pad)]).reshape(-1, step).sum(axis=1)
    edges = np.concatenate([edges[:-1:step], [edges[-1] + pad * h.width]])
    ax.bar(edges[:-1], counts, width=np.diff(edges), align="edge", color="#4477aa", linewidth=0)
    ax.set_yscale("log")
    ax.axvline(s.mean, color="#222222", linewidth=1, label="mean")
    for k in (-3, 3):
        ax.axvline(s.mean + k * s.std, color="#ee6677", linewidth=1, linestyle="--",
                   label="mean ± 3 std" if k > 0 else None)
    for p in (0.0001, 0.9999):
        if p in s.quantiles:
            ax.axvline(s.quantiles[p], color="#228833", linewidth=1, linestyle=":",
                       label="0.01% / 99.99%" if p > 0.5 else None)
    ax.set_title(name, fontsize=9)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=6, loc="upper right")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def write_html(stats: Mapping[str, TensorStats], directory: str | Path, *, title: str = "tensor statistics",
               qparams: Mapping[str, QuantParams] | None = None) -> Path:
    """Write ``index.html`` (a table of every statistic) and one histogram PNG per tensor into
    ``directory`` (created if missing); returns the path of ``index.html``."""
    folder = Path(directory)
    (folder / "hist").mkdir(parents=True, exist_ok=True)
    qparams = qparams or {}
    rows = []
    for i, (name, s) in enumerate(stats.items()):
        image = ""
        if s.histogram is not None:
            file = f"hist/{i:04d}-{re.sub(r'[^A-Za-z0-9_.-]', '_', name)[:80]}.png"
            write_bytes(folder / file, _png(name, s))
            image = f'<img src="{html.escape(file)}" alt="histogram of {html.escape(name)}">'
        q = qparams.get(name)
        quant = "" if q is None else html.escape(f"{q.quant_type} {q.method}: scale {np.asarray(q.scale).tolist()}, "
                                                 f"zero point {np.asarray(q.zero_point).astype(float).tolist()}")
        figures = [("samples", s.samples), ("values", s.size), ("finite", s.count), ("NaN", s.nan), ("+inf", s.posinf),
                   ("-inf", s.neginf), ("min", _fmt(s.min)), ("max", _fmt(s.max)), ("mean", _fmt(s.mean)),
                   ("std", _fmt(s.std)),
                   ("zero fraction", "-" if s.zero_fraction is None else f"{s.zero_fraction:.4f}")]
        figures += [(f"q{p:g}", _fmt(v)) for p, v in s.quantiles.items()]
        figures += [(k, f"{o.count:,.1f} in [{o.count_min:,}, {o.count_max:,}] outside [{_fmt(o.low)}, {_fmt(o.high)}]")
                    for k, o in s.outliers.items()]
        cells = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>" for k, v in figures)
        channels = ""
        if s.channels is not None:
            channels = f"<p>{len(s.channels.count)} channels along axis {s.channels.axis}: min " \
                       f"{html.escape(_fmt(_reduce(min, s.channels.min)))} .. max " \
                       f"{html.escape(_fmt(_reduce(max, s.channels.max)))}</p>"
        rows.append(f"<section><h2>{html.escape(name)} <small>{html.escape(s.dtype or '')} "
                    f"{html.escape(str(list(s.shape)) if s.shape else '')}</small></h2>"
                    f"<div class=row><table>{cells}</table>{image}</div>{channels}"
                    f"{'<p>quantization: ' + quant + '</p>' if quant else ''}</section>")
    page = (f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title><style>"
            "body{font-family:sans-serif;margin:2em}section{border-top:1px solid #ccc;padding:.5em 0}"
            ".row{display:flex;gap:2em;align-items:flex-start}th{text-align:left;padding-right:1em;font-weight:normal;"
            "color:#555}td{font-family:monospace}h2{font-size:1.1em}small{color:#777;font-weight:normal}"
            f"</style></head><body><h1>{html.escape(title)}</h1><p>{len(stats)} tensors; quantiles from a KLL "
            "sketch, outlier counts bounded by the histogram (see onegraph.stats.annotate).</p>"
            + "".join(rows) + "</body></html>")
    index = folder / "index.html"
    write_bytes(index, page.encode())
    return index


def _reduce(fn, values) -> float | None:
    present = [v for v in values if v is not None]
    return fn(present) if present else None
