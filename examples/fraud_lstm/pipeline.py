"""Fraud detection on card transactions as one ONNX graph: per-row preprocessing, windows of each card's
last transactions, a two-layer LSTM — everything in ``fraud.onnx``.

Run from the repository root (about 30 s of CPU, most of it torch's ONNX export)::

    python examples/fraud_lstm/pipeline.py --out fraud.onnx

Steps: generate transactions (``data.py``, seeded); fit the per-row preprocessing (hour and day of week,
log-scaled amount, one-hot category and merchant); shape each transaction's window of its card's last
``WINDOW`` transactions in Python (pandas, zero rows before a card's first transaction); train the LSTM for a
few epochs with torch (CPU); build the whole pipeline with :func:`onegraph.compose` (``sequence=`` stores the
window length and padding rule in the model, and ``onegraph.score`` applies them); check the graph against
the Python pipeline on held-out cards.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from sklearn.compose import ColumnTransformer
from sklearn.metrics import average_precision_score, roc_auc_score
from sklearn.pipeline import make_pipeline

sys.path.insert(0, str(Path(__file__).parent))
from data import generate  # noqa: E402
from features import TimeOfDay  # noqa: E402

import onegraph  # noqa: E402
from onegraph.export import SequenceSpec, TorchModule  # noqa: E402
from onegraph.frame import LogTransformer, OneHotEncoder, StandardScaler  # noqa: E402

WINDOW = 8
INPUTS = ["timestamp", "merchant", "category", "amount"]
SEQUENCE = SequenceSpec(group="card_id", order="timestamp", window=WINDOW, padding="pre")


def preprocessing() -> ColumnTransformer:
    """Per-row features: time of day and day of week, log amount (scaled), one-hot category and merchant."""
    return ColumnTransformer([
        ("time", make_pipeline(TimeOfDay(), StandardScaler()), ["timestamp"]),
        ("amount", make_pipeline(LogTransformer(), StandardScaler()), ["amount"]),
        ("category", OneHotEncoder(handle_unknown="ignore"), ["category"]),
        ("merchant", OneHotEncoder(handle_unknown="infrequent_if_exist", max_categories=16), ["merchant"]),
    ])


class FraudLSTM(torch.nn.Module):
    """Two stacked LSTM layers over a window ``[N, WINDOW, F]``; logits of (genuine, fraud) from the last step."""

    def __init__(self, n_features: int, hidden: int = 24) -> None:
        super().__init__()
        self.lstm = torch.nn.LSTM(n_features, hidden, num_layers=2, batch_first=True)
        self.head = torch.nn.Linear(hidden, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return self.head(out[:, -1, :])


def windows(features: np.ndarray, frame: pd.DataFrame, window: int = WINDOW) -> np.ndarray:
    """``[N, window, F]``: for each row (in ``frame``'s order), its card's last ``window`` rows up to it, in
    time order, zero rows before the card's first transaction (pandas ``groupby().shift``)."""
    order = frame.sort_values(["card_id", "timestamp"], kind="stable").index
    position = pd.Series(np.arange(len(frame)), index=frame.index)[order].to_numpy()
    feats = pd.DataFrame(np.asarray(features, np.float64)[position])
    cards = frame["card_id"].to_numpy()[position]
    out = np.zeros((len(frame), window, feats.shape[1]))
    for lag in range(window):
        out[:, window - 1 - lag, :] = feats.groupby(cards).shift(lag).fillna(0.0).to_numpy()
    restored = np.empty_like(out)
    restored[position] = out
    return restored


def train(x: np.ndarray, y: np.ndarray, epochs: int = 3, seed: int = 0) -> FraudLSTM:
    """Adam, cross-entropy weighted toward the rare fraud class, batches of 128."""
    torch.manual_seed(seed)
    model = FraudLSTM(x.shape[2])
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    weight = torch.tensor([1.0, float((y == 0).sum() / max((y == 1).sum(), 1)) ** 0.5])
    loss_fn = torch.nn.CrossEntropyLoss(weight=weight)
    xt, yt = torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y.astype(np.int64))
    generator = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        for batch in torch.randperm(len(xt), generator=generator).split(128):
            optimizer.zero_grad()
            loss_fn(model(xt[batch]), yt[batch]).backward()
            optimizer.step()
    return model.eval()


def predict_python(pre: ColumnTransformer, model: FraudLSTM, frame: pd.DataFrame) -> np.ndarray:
    """The Python pipeline: preprocessing, pandas windows, the torch model, softmax -> ``[N, 2]``."""
    x = windows(pre.transform(frame[INPUTS]), frame)
    with torch.no_grad():
        return torch.softmax(model(torch.from_numpy(x.astype(np.float32))).double(), dim=1).numpy()


def fit(cards: int = 200, epochs: int = 3, seed: int = 0) -> dict:
    """Generate, split by card, fit the preprocessing and the LSTM; returns the pieces and timings."""
    # one thread: this small LSTM gains nothing from two, and on a loaded 2-core machine two threads spin
    # against each other (10x the CPU time measured here)
    torch.set_num_threads(1)
    frame = generate(n_cards=cards, seed=seed)
    test_cards = set(frame["card_id"].drop_duplicates().sample(frac=0.25, random_state=seed))
    is_test = frame["card_id"].isin(test_cards).to_numpy()
    train_frame, test_frame = frame[~is_test], frame[is_test]
    pre = preprocessing().fit(train_frame[INPUTS])
    start = time.process_time()
    model = train(windows(pre.transform(train_frame[INPUTS]), train_frame), train_frame["label"].to_numpy(),
                  epochs=epochs, seed=seed)
    return {"frame": frame, "train": train_frame, "test": test_frame, "preprocessing": pre, "model": model,
            "train_seconds": time.process_time() - start}


def build(pre: ColumnTransformer, model: FraudLSTM, sample: pd.DataFrame, path=None):
    """One graph: preprocessing + windows + LSTM, checked against the models on ``sample``."""
    width = len(pre.get_feature_names_out())
    return onegraph.compose(pre, {"lstm": TorchModule(model, classes=[0, 1], width=width, steps=WINDOW)},
                            sample.drop(columns="label"), sequence=SEQUENCE, path=path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="fraud.onnx")
    parser.add_argument("--cards", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    fitted = fit(args.cards, args.epochs, args.seed)
    frame, test = fitted["frame"], fitted["test"]
    print(f"data      {len(frame):,} transactions, {frame['card_id'].nunique()} cards, "
          f"{frame['label'].mean():.2%} fraud; {len(test):,} transactions of held-out cards")
    print(f"train     two-layer LSTM over windows of {WINDOW}, {args.epochs} epochs: {fitted['train_seconds']:.1f} s CPU")
    t = time.perf_counter()
    build(fitted["preprocessing"], fitted["model"], fitted["train"].head(2000), path=args.out)
    print(f"build     {args.out} ({Path(args.out).stat().st_size / 1024:.0f} KiB) in {time.perf_counter() - t:.1f} s")
    python = predict_python(fitted["preprocessing"], fitted["model"], test)
    scores = onegraph.score(args.out, test.drop(columns="label"))
    graph = scores[["probabilities_0", "probabilities_1"]].to_numpy()
    labels_equal = (scores["label"].to_numpy() == python.argmax(axis=1)).mean()
    print(f"parity    held-out cards: max abs diff {np.abs(graph - python).max():.1e}, labels agree {labels_equal:.2%}")
    y = test["label"].to_numpy()
    print(f"quality   held-out ROC AUC {roc_auc_score(y, graph[:, 1]):.3f}, "
          f"average precision {average_precision_score(y, graph[:, 1]):.3f} (fraud rate {y.mean():.2%})")
    card = test.loc[test["label"] == 1, "card_id"].iloc[0]
    one_card = test[test["card_id"] == card]
    first_fraud = int(np.flatnonzero(one_card["label"].to_numpy())[0])
    shown = one_card.iloc[max(first_fraud - 3, 0):first_fraud + 3]
    print(f"score     onegraph.score(model, transactions of {card}) around its first fraud:")
    scored = onegraph.score(args.out, one_card.drop(columns="label")).loc[shown.index]
    print(pd.concat([shown[["timestamp", "category", "amount", "label"]],
                     scored.rename(columns={"label": "predicted"}).round(3)], axis=1).to_string())
    print(f"total     {time.perf_counter() - start:.1f} s wall, {time.process_time():.1f} s CPU")


if __name__ == "__main__":
    main()
