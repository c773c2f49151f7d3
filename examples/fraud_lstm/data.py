"""A seeded generator of card transactions with fraud bursts.

Each card has a home pattern: a few favourite merchants, daytime purchases, amounts around its own typical
amount (log-normal). Some cards are compromised at a random moment: from then on, a burst of transactions
follows in quick succession, mostly at night, mostly in risky categories (electronics, gift cards, jewelry, online
marketplaces) at unfamiliar merchants, with larger amounts. Fraud transactions are labelled 1. A single
transaction often looks normal; the burst — several unusual transactions in a row on one card — is what a
sequence model sees.

Columns: ``timestamp`` (datetime64[ns]), ``merchant`` (str), ``category`` (str), ``amount`` (float64, in
dollars), ``card_id`` (str), ``label`` (int64: 1 fraud, 0 genuine). Rows are in time order across cards.
Same ``seed`` -> same table (numpy's ``default_rng``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

CATEGORIES = ["grocery", "restaurant", "fuel", "pharmacy", "clothing", "travel", "utilities", "entertainment",
              "electronics", "gift_cards", "jewelry", "online_marketplace"]
RISKY = ["electronics", "gift_cards", "jewelry", "online_marketplace"]
MERCHANTS_PER_CATEGORY = 6


def merchants() -> dict[str, list[str]]:
    """Merchant names per category (``grocery_03``...)."""
    return {c: [f"{c}_{i:02d}" for i in range(MERCHANTS_PER_CATEGORY)] for c in CATEGORIES}


def generate(n_cards: int = 300, days: int = 60, fraud_share: float = 0.15, seed: int = 0) -> pd.DataFrame:
    """Card transactions over ``days`` days from 2024-01-01 for ``n_cards`` cards.

    Parameters
    ----------
    n_cards: number of cards.
    days: length of the period.
    fraud_share: share of cards compromised once during the period.
    seed: random seed.
    """
    rng = np.random.default_rng(seed)
    names = merchants()
    start = pd.Timestamp("2024-01-01").value
    day_ns = 86_400 * 10**9
    rows = []
    for card in range(n_cards):
        card_id = f"card_{card:04d}"
        typical = rng.lognormal(3.3, 0.5)
        favourites = rng.choice([c for c in CATEGORIES if c not in RISKY], size=3, replace=False)
        n = rng.poisson(0.8 * days) + 5
        t = np.sort(rng.uniform(0, days, n))
        hours = np.clip(rng.normal(14, 3.5, n), 6, 22.9)
        for day, hour in zip(t.astype(int), hours):
            category = rng.choice(favourites) if rng.random() < 0.85 else rng.choice(CATEGORIES)
            merchant = names[category][min(int(rng.exponential(1.2)), MERCHANTS_PER_CATEGORY - 1)]
            amount = round(float(typical * rng.lognormal(0, 0.4)), 2)
            rows.append((start + day * day_ns + int(hour * 3600e9), merchant, category, amount, card_id, 0))
        if rng.random() < fraud_share:
            at = start + int(rng.uniform(days * 0.3, days * 0.9) * day_ns)
            hour = rng.uniform(0, 5) if rng.random() < 0.6 else rng.uniform(8, 22)  # mostly at night
            at = at - at % day_ns + int(hour * 3600e9)
            for _ in range(int(rng.integers(2, 7))):
                at += int(rng.exponential(45) * 60e9)  # minutes apart
                category = rng.choice(RISKY) if rng.random() < 0.6 else rng.choice(CATEGORIES)
                merchant = names[category][int(rng.integers(0, MERCHANTS_PER_CATEGORY))]
                amount = round(float(typical * rng.lognormal(0.6, 0.6)), 2)
                rows.append((at, merchant, category, amount, card_id, 1))
    frame = pd.DataFrame(rows, columns=["timestamp", "merchant", "category", "amount", "card_id", "label"])
    frame["timestamp"] = pd.to_datetime(frame["timestamp"], unit="ns")
    return frame.sort_values(["timestamp", "card_id"], kind="stable").reset_index(drop=True)
