"""The documentation corpus (benchmarks/docs_corpus.py): passages split at headings, markup removed,
the length cap, stable names; and the hand-written questions (benchmarks/data/docs_qa.json) well-formed."""

from __future__ import annotations

import io
import json
import re
import tarfile
from pathlib import Path
from typing import Any

from benchmarks.docs_corpus import MAX_CHARS, PACKAGE, VERSION, docs_passages, questions_check

BASE_DIR = Path(__file__).resolve().parents[3]
QA = BASE_DIR / "benchmarks" / "data" / "docs_qa.json"
NAME = re.compile(r"^[a-z0-9-]+__\d{2}-[a-z0-9-]+\.txt$")

GUIDE = """\
.. _guide:

Guide
=====

.. currentmodule:: click

The :func:`~click.echo` function prints text, see :ref:`the options page <options>` and
``--help``. Read `the website <https://example.org/>`_ for **more**, or *less*.

.. versionadded:: 2.0

First Part
----------

Options are declared with :class:`click.Option`.

.. code-block:: python

    @click.command()
    def hello():
        click.echo("Hello")

.. click:run::

    invoke(hello, args=["--help"])

.. note::

   Notes keep their text with a short prefix.

.. autofunction:: command

Empty
-----

.. toctree::

   options

Second Part
~~~~~~~~~~~

Literal blocks follow a double colon::

    $ hello --name World

* a list item that is
  wrapped over two lines
* another item
"""

SKIPPED = "Changelog\n=========\n\nVersion 1.0 fixed everything that was ever broken in the whole library.\n"


def archive(tmp_path: Path, files: dict[str, str], name: str = "pkg.tar.gz") -> Path:
    """A .tar.gz sdist holding ``files`` (path -> text), written in the order given."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    target = tmp_path / name
    target.write_bytes(buffer.getvalue())
    return target


def texts(path: Path) -> dict[str, str]:
    return {name: data.decode() for name, data in docs_passages(path)}


def test_sections_become_passages_titled_by_their_heading(tmp_path: Path) -> None:
    passages = texts(archive(tmp_path, {"pkg-1.0/docs/guide.rst": GUIDE}))
    # "Empty" holds only a toctree: skipped, and the numbering counts kept passages only.
    assert list(passages) == ["guide__01-guide.txt", "guide__02-first-part.txt", "guide__03-second-part.txt"]
    assert [text.split("\n", 1)[0] for text in passages.values()] == ["Guide", "First Part", "Second Part"]
    assert all(NAME.match(name) for name in passages)


def test_markup_is_removed_and_content_kept(tmp_path: Path) -> None:
    passages = texts(archive(tmp_path, {"pkg-1.0/docs/guide.rst": GUIDE}))
    intro, first, second = passages.values()
    assert "The echo function prints text, see the options page and --help." in intro
    assert "Read the website for more, or less." in intro
    assert "New in version 2.0." in intro
    assert "Options are declared with click.Option." in first
    assert '@click.command()\ndef hello():\n    click.echo("Hello")' in first
    assert "Note: Notes keep their text with a short prefix." in first
    assert "Literal blocks follow a double colon:\n\n$ hello --name World" in second
    assert "* a list item that is wrapped over two lines\n* another item" in second
    everything = "\n".join(passages.values())
    noise = (".. ", "::", ":func:", ":ref:", "``", "`", "**", "_guide", "currentmodule", "invoke(", "autofunction")
    assert [marker for marker in noise if marker in everything] == []


def test_long_sections_split_on_paragraphs_under_the_cap(tmp_path: Path) -> None:
    paragraphs = [f"Paragraph {number} " + "word " * 60 for number in range(40)]
    source = "Long\n====\n\n" + "\n\n".join(paragraphs) + "\n\nShort\n=====\n\n" + "x " * 60 + "\n"
    passages = texts(archive(tmp_path, {"pkg-1.0/docs/long.rst": source}))
    long = [text for name, text in passages.items() if name.endswith("-long.txt")]
    assert len(long) > 1 and all(len(text) <= MAX_CHARS for text in passages.values())
    assert all(text.startswith("Long\n\n") for text in long)
    bodies = [text.removeprefix("Long\n\n").split("\n\n") for text in long]
    assert [paragraph for body in bodies for paragraph in body] == [p.strip() for p in paragraphs]
    assert list(passages)[-1] == f"long__{len(long) + 1:02d}-short.txt"


def test_a_paragraph_longer_than_a_passage_is_split_at_words(tmp_path: Path) -> None:
    source = "Huge\n====\n\n" + " ".join(f"w{number}" for number in range(2000)) + "\n"
    passages = texts(archive(tmp_path, {"pkg-1.0/docs/huge.rst": source}))
    assert len(passages) > 1 and all(len(text) <= MAX_CHARS for text in passages.values())
    words = [word for text in passages.values() for word in text.removeprefix("Huge\n\n").split()]
    assert words == [f"w{number}" for number in range(2000)]


def test_names_and_order_are_deterministic_and_other_files_skipped(tmp_path: Path) -> None:
    files = {
        "pkg-1.0/docs/zeta.rst": GUIDE,
        "pkg-1.0/docs/alpha.rst": GUIDE.replace("Guide\n=====", "Alpha\n====="),
        "pkg-1.0/docs/changes.rst": SKIPPED,
        "pkg-1.0/docs/license.rst": SKIPPED,
        "pkg-1.0/docs/api.rst": SKIPPED,
        "pkg-1.0/docs/nested/deep.rst": SKIPPED,
        "pkg-1.0/docs/notes.txt": SKIPPED,
        "pkg-1.0/README.rst": SKIPPED,
    }
    first = docs_passages(archive(tmp_path, files, "a.tar.gz"))
    shuffled = docs_passages(archive(tmp_path, dict(reversed(files.items())), "b.tar.gz"))
    assert first == shuffled == docs_passages(archive(tmp_path, files, "a.tar.gz"))
    names = [name for name, _ in first]
    assert names == sorted(names, key=lambda name: name.split("__")[0]) and len(set(names)) == len(names)
    assert {name.split("__")[0] for name in names} == {"alpha", "zeta"}
    assert names[0] == "alpha__01-alpha.txt"
    assert all(isinstance(data, bytes) and data.decode() for _, data in first)


def qa() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(QA.read_text(encoding="utf-8"))
    return loaded


def test_the_questions_are_well_formed() -> None:
    data = qa()
    assert (data["package"], data["version"]) == (PACKAGE, VERSION)
    assert data["licence"] and data["written"]
    answerable, unanswerable = data["answerable"], data["unanswerable"]
    assert isinstance(answerable, list) and isinstance(unanswerable, list)
    assert len(answerable) == 60 and len(unanswerable) == 60
    ids = [item["id"] for item in answerable + unanswerable]
    assert len(set(ids)) == len(ids) == 120
    for item in answerable:
        assert re.fullmatch(r"a\d{2}", item["id"]) and NAME.match(item["passage"]), item
        assert all(isinstance(item[key], str) and item[key] for key in ("question", "answer", "evidence")), item
        assert item["answer"] in item["evidence"], item["id"]
    for item in unanswerable:
        assert re.fullmatch(r"u\d{2}", item["id"]) and item["question"] and item["why"], item
        assert item["kind"] in ("in_domain", "off_topic"), item
    kinds = [item["kind"] for item in unanswerable]
    assert kinds.count("in_domain") == 30 and kinds.count("off_topic") == 30
    assert len({item["question"] for item in answerable + unanswerable}) == 120


def test_questions_check_names_evidence_not_in_its_passage_and_terms_that_are_there() -> None:
    passages = [("a__01-x.txt", b"X\nThe default is 5."), ("b__01-y.txt", b"Y\nNothing about TOML.")]
    good = {"answerable": [{"id": "a01", "passage": "a__01-x.txt", "evidence": "default is 5"}],
            "unanswerable": [{"id": "u01", "absent_terms": ["yaml"]}]}  # fmt: skip
    assert questions_check(passages, good) == []
    bad = {"answerable": [{"id": "a01", "passage": "b__01-y.txt", "evidence": "default is 5"}],
           "unanswerable": [{"id": "u01", "absent_terms": ["toml"]}]}  # fmt: skip
    assert questions_check(passages, bad) == ["a01: evidence not in b__01-y.txt", "u01: 'toml' found"]
