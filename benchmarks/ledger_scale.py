"""The change log at scale: append rate, tree head, proofs and verification at N entries.

    make bench-ledger            (a throwaway SQLite database under var/bench-ledger, wiped first)

Entries are appended through ``entries_append`` (in transactions of --batch entries, as ingestion
does), then the tree head, inclusion proofs, consistency proofs and an offline ``log_verify`` are
timed. Writes benchmarks/results/ledger_scale.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")

import django

django.setup()

from django.db import transaction

from apps.ledger import merkle
from apps.ledger.content import entity_content
from apps.ledger.services import Change, consistency_path, entries_append, inclusion_path, leaf_hashes, tree_head
from apps.ledger.verify import log_verify

RESULTS = BASE_DIR / "benchmarks" / "results" / "ledger_scale.json"


def _changes(start: int, count: int) -> list[Change]:
    return [
        Change(
            "entity.renamed",
            "Entity",
            f"entity-{start + i}",
            entity_content(entity_id=f"entity-{start + i}", name=f"Name {start + i}", type_="ORG"),
            entity_content(entity_id=f"entity-{start + i}", name=f"New name {start + i}", type_="ORG"),
        )
        for i in range(count)
    ]


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=100)
    args = parser.parse_args()

    single = []
    for i in range(200):  # one entry per transaction, as a curation action appends
        started = time.perf_counter()
        with transaction.atomic():
            entries_append(actor="bench", changes=_changes(i, 1))
        single.append((time.perf_counter() - started) * 1000)
    started = time.perf_counter()
    done = len(single)
    while done < args.entries:
        count = min(args.batch, args.entries - done)
        with transaction.atomic():
            entries_append(actor="bench", changes=_changes(done, count))
        done += count
    batched_s = time.perf_counter() - started

    started = time.perf_counter()
    head = tree_head()
    head_ms = _ms(started)
    started = time.perf_counter()
    leaves = leaf_hashes()
    load_ms = _ms(started)
    started = time.perf_counter()
    merkle.root(leaves)
    root_ms = _ms(started)
    started = time.perf_counter()
    path = inclusion_path(seq=args.entries // 3, size=head.size)
    inclusion_ms = _ms(started)
    started = time.perf_counter()
    consistency_path(old_size=head.size // 2, new_size=head.size)
    consistency_ms = _ms(started)
    started = time.perf_counter()
    report = log_verify(chain=None)
    verify_ms = _ms(started)
    assert report.ok and report.root == head.root

    result = {
        "entries": head.size,
        "append_one_per_transaction_ms": {
            "p50": round(statistics.median(single), 2),
            "p95": round(sorted(single)[int(len(single) * 0.95)], 2),
        },
        "append_batched_entries_per_s": round((args.entries - len(single)) / batched_s),
        "batch": args.batch,
        "tree_head_ms": head_ms,
        "leaf_hashes_load_ms": load_ms,
        "root_from_leaves_ms": root_ms,
        "inclusion_proof_ms": inclusion_ms,
        "inclusion_path_nodes": len(path),
        "consistency_proof_ms": consistency_ms,
        "verify_offline_ms": verify_ms,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "database": "sqlite"},
        "command": "make bench-ledger",
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    for key, value in result.items():
        print(f"{key:<34} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
