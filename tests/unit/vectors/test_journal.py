"""Changes between snapshots go to the space's journal: appended and fsynced per commit, replayed
by readers, folded into a snapshot once grown, and a torn last record is never replayed."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from apps.vectors.ids import vector_id
from apps.vectors.journal import Change, journal_append, journal_path, journal_read, journal_size
from apps.vectors.registry import JournalPolicy, VectorRegistry
from tests.unit.vectors.fakes import clustered, items, node_id, space

BASE_DIR = Path(__file__).resolve().parents[3]


def registry(root: Path, *, min_vectors: int = 1000, index_type: str = "flat") -> VectorRegistry:
    return VectorRegistry(root, lambda name: space(index_type), JournalPolicy(fraction=0.5, min_vectors=min_vectors))


def add(writer: VectorRegistry, start: int, stop: int, *, seed: int = 0) -> None:
    with writer.writing("text") as index:
        rows = clustered(stop - start, 32, seed=seed)
        index.add(items(start, stop), rows)
        writer.commit("text", index, Change(items=tuple(items(start, stop)), vectors=rows))


def remove(writer: VectorRegistry, numbers: range) -> None:
    ids = np.array([vector_id(node_id(i)) for i in numbers], dtype=np.int64)
    with writer.writing("text") as index:
        index.remove(ids)
        writer.commit("text", index, Change(removed=ids))


def test_records_round_trip_and_a_damaged_one_ends_the_journal(tmp_path: Path) -> None:
    path = tmp_path / "journal.1.log"
    first = Change(items=tuple(items(0, 3)), vectors=clustered(3, 32))
    end = journal_append(path, first, valid_end=0)
    end = journal_append(path, Change(removed=np.array([5, 6], dtype=np.int64)), valid_end=end)
    changes, read_end = journal_read(path)
    assert read_end == end == journal_size(path)
    assert changes[0].items == first.items and np.array_equal(changes[0].vectors, first.vectors)
    assert changes[1].removed.tolist() == [5, 6] and changes[1].added == 0
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # the second record's payload no longer matches its checksum
    path.write_bytes(bytes(data))
    assert len(journal_read(path)[0]) == 1
    assert journal_read(tmp_path / "none.log", 0) == ([], 0)


def test_commits_append_to_the_journal_and_readers_replay_them(tmp_path: Path) -> None:
    writer, reader = registry(tmp_path), registry(tmp_path)
    add(writer, 0, 10)  # nothing saved yet: the first commit is a snapshot
    assert reader.get("text").version == 1 and journal_size(journal_path(tmp_path / "text", 1)) == 0
    seen = reader.get("text")
    add(writer, 10, 30, seed=1)
    remove(writer, range(5))
    assert (tmp_path / "text" / "manifest.json").exists() and journal_size(journal_path(tmp_path / "text", 1)) > 0
    again = reader.get("text")
    assert again is seen  # replayed in place: no reload of the snapshot
    assert (again.count, again.version) == (25, 1)
    removed = {vector_id(node_id(i)) for i in range(5)}
    assert not removed & set(again.ids().tolist())
    fresh = registry(tmp_path).get("text")  # a new process: the snapshot, then the journal
    assert fresh.count == 25
    assert sorted(fresh.ids().tolist()) == sorted(again.ids().tolist())


def test_a_grown_journal_is_folded_into_a_new_snapshot(tmp_path: Path) -> None:
    writer, reader = registry(tmp_path, min_vectors=30), registry(tmp_path, min_vectors=30)
    add(writer, 0, 20)
    for step in range(4):  # 4 x 10 changes, folded once they reach 30
        add(writer, 20 + 10 * step, 30 + 10 * step, seed=step)
    directory = tmp_path / "text"
    index = reader.get("text")
    assert (index.version, index.count) == (2, 60)
    assert journal_size(journal_path(directory, 2)) > 0  # the 4th commit, after the fold
    writer.compact("text")
    assert reader.get("text").version == 3 and journal_size(journal_path(directory, 3)) == 0
    assert not journal_path(directory, 1).exists()  # older than the previous version: pruned
    assert registry(tmp_path).get("text").count == 60


def test_a_torn_last_record_is_skipped_then_cut_off_by_the_next_writer(tmp_path: Path) -> None:
    writer = registry(tmp_path)
    add(writer, 0, 10)
    add(writer, 10, 20, seed=1)
    path = journal_path(tmp_path / "text", 1)
    whole = journal_size(path)
    with open(path, "ab") as handle:  # a writer killed mid-append
        handle.write(b"RKJ1\x00\x10\x00\x00partial")
    assert registry(tmp_path).get("text").count == 20
    other = registry(tmp_path)
    add(other, 20, 25, seed=2)
    changes, end = journal_read(path)
    assert len(changes) == 2 and end == journal_size(path) > whole
    assert registry(tmp_path).get("text").count == 25
    assert writer.get("text").count == 25  # the first writer replays the other's record


LOOP = """
import sys
sys.path.insert(0, {base!r})
from pathlib import Path
from tests.unit.vectors.test_journal import add, registry
writer = registry(Path({root!r}), min_vectors=10_000_000)
for round in range(1000):
    add(writer, 1000 + round * 50, 1050 + round * 50, seed=round)
    print(round, flush=True)
"""


def test_sigkill_at_random_moments_of_commits_never_breaks_the_space(tmp_path: Path) -> None:
    add(registry(tmp_path), 0, 1000)
    rng = np.random.default_rng(11)
    for _ in range(4):
        child = subprocess.Popen(
            [sys.executable, "-c", LOOP.format(base=str(BASE_DIR), root=str(tmp_path))],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        child.stdout.readline()  # committing
        try:
            child.wait(timeout=float(rng.uniform(0.02, 0.3)))
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGKILL)
            child.wait()
        assert child.returncode == -signal.SIGKILL
        count = registry(tmp_path).get("text").count
        assert count >= 1050 and count % 50 == 0


@pytest.mark.parametrize("index_type", ["flat", "hnsw"])
def test_replay_gives_the_writers_answers(tmp_path: Path, index_type: str) -> None:
    writer = registry(tmp_path, index_type=index_type)
    add(writer, 0, 100)
    add(writer, 100, 150, seed=1)
    remove(writer, range(40, 60))
    add(writer, 50, 55, seed=2)  # re-added after removal
    query = clustered(3, 32, seed=3)
    ours = [[hit.id for hit in row] for row in writer.get("text").search(query, 5)]
    replayed = registry(tmp_path, index_type=index_type).get("text")
    assert [[hit.id for hit in row] for row in replayed.search(query, 5)] == ours
    assert replayed.count == 135
