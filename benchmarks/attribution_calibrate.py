"""Calibrate fast attribution's layer weights on HotpotQA copy cases (questions 50-99).

    make attribution-calibrate

Each case's answer is one supporting sentence copied word for word (apps.provenance.faithfulness);
for every layer, the share of answer tokens whose head-averaged attention mass is highest on
that sentence is measured, for each length normalisation. A layer's weight is its accuracy to
the 4th power (good layers dominate, none is dropped outright), and the length power with the
best weighted accuracy is kept. Writes apps/provenance/calibration/<model>.json; the
faithfulness benchmark (questions 0-49) checks the result on cases it was not fitted on.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")

import django

django.setup()

from django.conf import settings

from apps.models import registry
from apps.provenance import faithfulness
from apps.provenance.fast import CALIBRATION_DIR, FastParams, layer_attention, unit_attention

POWERS = (0.0, 0.5, 1.0)
EXPONENT = 4
CALIBRATION_QUESTIONS = slice(50, 100)
PARAGRAPHS = 4


def main() -> int:
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    generator = registry.generator()
    tokenizer = generator.tokenizer
    items = faithfulness.hotpotqa_items(Path(settings.DEMO_DATA_DIR))[CALIBRATION_QUESTIONS]
    cases = faithfulness.copy_cases(
        items, paragraphs=PARAGRAPHS, count_tokens=lambda text: len(tokenizer.encode(text, add_special_tokens=False))
    )
    collected = []
    for case in cases:
        layout = faithfulness.case_layout(case, tokenizer)
        right = next(i for i, u in enumerate(layout.units) if (u.source, u.index) == case.target)
        collected.append((layer_attention(generator.model, layout), layout, right))
    layers = collected[0][0].shape[0]

    def accuracy(weights: list[float], power: float) -> float:
        params = FastParams(layer_weights=tuple(weights), length_power=power)
        return float(
            np.mean(
                [
                    np.mean(unit_attention(att, layout, params).argmax(axis=1) == right)
                    for att, layout, right in collected
                ]
            )
        )

    results: dict[float, dict[str, Any]] = {}
    for power in POWERS:
        per_layer = [accuracy([1.0 if i == layer else 0.0 for i in range(layers)], power) for layer in range(layers)]
        weights = [max(acc, 1e-3) ** EXPONENT for acc in per_layer]
        results[power] = {
            "per_layer_accuracy": [round(a, 4) for a in per_layer],
            "uniform_accuracy": round(accuracy([1.0] * layers, power), 4),
            "weighted_accuracy": round(accuracy(weights, power), 4),
            "weights": weights,
        }
        row = results[power]
        print(f"power {power}: uniform {row['uniform_accuracy']:.3f}  weighted {row['weighted_accuracy']:.3f}")
    best = max(POWERS, key=lambda p: results[p]["weighted_accuracy"])
    total = sum(results[best]["weights"])
    out = CALIBRATION_DIR / f"{generator.name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    calibration = {
        "model": generator.name,
        "how": "layer weight = accuracy ** 4 of the layer alone on copy cases; length power with the best accuracy",
        "command": "make attribution-calibrate",
        "cases": len(collected),
        "questions": "HotpotQA (../shared/data/multihop/hipporag_hotpotqa_train.json) 50-99",
        "length_power": best,
        "layer_weights": [round(w / total, 6) for w in results[best]["weights"]],
        "accuracy_on_these_cases": {str(p): {k: v for k, v in r.items() if k != "weights"} for p, r in results.items()},
    }
    out.write_text(json.dumps(calibration, indent=2) + "\n")
    print(f"length power {best}; written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
