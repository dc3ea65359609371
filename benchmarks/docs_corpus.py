"""A non-Wikipedia evaluation corpus: the prose documentation of one pinned PyPI source distribution.

    python benchmarks/docs_corpus.py         (fetches into var/docs-corpus, prints the passage count)

The "not found in your documents" thresholds were fitted on Wikipedia-derived multi-hop datasets;
this corpus checks them on a technical manual instead. The package is Click (BSD-3-Clause), a
library for command line interfaces: its sdist carries the reStructuredText sources of its manual
under ``docs/``. ``docs_passages`` turns them into plain-text passages, one file per section (a
long section split on paragraph boundaries), the first line of each the section's title. The
questions about it are benchmarks/data/docs_qa.json, written from these passages before any
retrieval was run.

Skipped: the changelog (``docs/changes.rst`` includes CHANGES.rst), the licence (``docs/license.rst``)
and the API reference (``docs/api.rst``: autodoc directives only, the text lives in docstrings that
are not part of the manual); the repository's README, LICENSE and CHANGES files outside ``docs/``.

Markup: section underlines and labels are dropped; directives are rendered as a reader of the
built manual sees them (``code-block`` and ``click:example`` keep their code, admonitions and
``versionadded`` keep their text with a short prefix, ``click:run`` invocations, autodoc, toctree,
images and the like are dropped); inline roles keep their text (:func:`~click.echo` -> echo), links
keep their title, literal and emphasis markers are removed; wrapped prose lines are joined.
"""

from __future__ import annotations

import hashlib
import io
import re
import subprocess
import sys
import tarfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

PACKAGE = "click"
VERSION = "8.1.7"
LICENCE = "BSD-3-Clause"
ARCHIVE = f"{PACKAGE}-{VERSION}.tar.gz"
SHA256 = "ca9853ad459e787e2192211578cc907e7594e294c7ccc834310722b41b9ca6de"

DOCS_DIR = "docs"
DOCS_SUFFIX = ".rst"
SKIPPED = frozenset({"changes", "license", "api"})  # changelog, licence, autodoc-only API reference
MAX_CHARS = 1500  # a passage, title line included
MIN_BODY_CHARS = 80  # a section with less text than this (title excluded) is skipped
SLUG_CHARS = 40

UNDERLINE = re.compile(r"^([=\-~^\"'`#*+<>:._])\1{2,}\s*$")
DIRECTIVE = re.compile(r"^\.\.\s+(?P<name>[A-Za-z][\w:-]*)::(?:\s+(?P<arg>.*))?$")
EXPLICIT = re.compile(r"^\.\.(?:\s|$)")  # comments, link targets, labels, substitution definitions
OPTION = re.compile(r"^:[\w-]+:(?:\s.*)?$")
ITEM = re.compile(r"^(?:[-*+]|\d+[.)]|#\.|\(\d+\))\s+")
INLINE = re.compile(
    r"``(?P<lit>.+?)``"
    r"|:(?P<role>[A-Za-z][\w.+-]*(?::[A-Za-z][\w.+-]*)*):`(?P<rtext>[^`]+)`"
    r"|`(?P<ltext>[^`<]*?)\s*<(?P<url>[^`>]*)>`__?"
    r"|`(?P<itext>[^`]+)`(?:__?)?"
    r"|\*\*(?P<strong>[^*]+?)\*\*"
    r"|(?<![\w*\\])\*(?P<em>[^*\s](?:[^*]*?[^*\s])?)\*(?![\w*])"
    r"|\\(?P<escaped>.)"
    r"|\b(?P<ref>[A-Za-z][\w-]*)_(?![\w-])"
)
TITLED = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]*)>$", re.DOTALL)

CODE_DIRECTIVES = frozenset({"code-block", "code", "sourcecode", "click:example"})
PREFIXED = {
    "note": "Note:",
    "warning": "Warning:",
    "tip": "Tip:",
    "hint": "Hint:",
    "important": "Important:",
    "caution": "Caution:",
    "attention": "Attention:",
    "danger": "Danger:",
    "error": "Error:",
    "seealso": "See also:",
}
VERSIONED = {
    "versionadded": "New in version",
    "versionchanged": "Changed in version",
    "deprecated": "Deprecated since version",
}
CONTAINERS = frozenset({"tabs", "container", "only", "topic", "rubric", "sidebar"})
TABS = frozenset({"tab", "group-tab", "code-tab"})


def docs_fetch(cache_dir: Path) -> Path:
    """The pinned sdist in ``cache_dir``: downloaded with pip once, reused afterwards; its SHA-256 checked."""
    archive = cache_dir / ARCHIVE
    if not archive.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        command = ["pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:", f"{PACKAGE}=={VERSION}"]
        subprocess.run([sys.executable, "-m", *command, "--dest", str(cache_dir)], check=True)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != SHA256:
        raise RuntimeError(f"{archive}: SHA-256 {digest}, expected {SHA256}")
    return archive


def docs_passages(archive: Path) -> list[tuple[str, bytes]]:
    """The passages of the manual in ``archive`` (a .tar.gz sdist): ``(name, utf-8 text)``, by file then position.

    Reads ``<top>/docs/*.rst`` except ``SKIPPED``; the name is ``<stem>__<nn>-<slug>.txt``, ``nn`` counting
    the file's kept passages from 01."""
    passages: list[tuple[str, bytes]] = []
    with tarfile.open(archive, "r:*") as tar:
        members = {}
        for member in tar.getmembers():
            path = PurePosixPath(member.name)
            if (
                member.isfile()
                and len(path.parts) == 3
                and path.parts[1] == DOCS_DIR
                and path.suffix == DOCS_SUFFIX
                and path.stem not in SKIPPED
            ):
                members[path.stem] = member
        for stem in sorted(members):
            handle = tar.extractfile(members[stem])
            if handle is None:
                continue
            with handle:
                source = io.TextIOWrapper(handle, encoding="utf-8").read()
            for number, text in enumerate(document_passages(source), start=1):
                title = text.partition("\n")[0]
                passages.append((f"{stem}__{number:02d}-{slug(title)}.txt", text.encode()))
    return passages


def document_passages(source: str) -> list[str]:
    """One reStructuredText document as passages: its sections' text, each at most ``MAX_CHARS``."""
    passages: list[str] = []
    for title, lines in sections(source.expandtabs(8).splitlines()):
        blocks = render(lines)
        if sum(len(block) for block in blocks) < MIN_BODY_CHARS:
            continue
        passages.extend(pack(title, blocks))
    return passages


def slug(title: str) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    return words[:SLUG_CHARS].rstrip("-") or "section"


def sections(lines: Sequence[str]) -> list[tuple[str, list[str]]]:
    """Split at section headings (a title underlined, or over- and underlined, at the margin): ``(title, body)``.

    Text before the first heading goes with the first section."""
    found: list[tuple[str, list[str]]] = []
    title, body, preamble = "", list[str](), list[str]()
    i = 0
    while i < len(lines):
        line = lines[i]
        after = lines[i + 1] if i + 1 < len(lines) else ""
        starts = i == 0 or not lines[i - 1].strip()
        heading, skip = "", 0
        if (
            starts
            and UNDERLINE.match(line)
            and i + 2 < len(lines)
            and after.strip()
            and lines[i + 2].rstrip() == line.rstrip()
        ):
            heading, skip = after.strip(), 3
        elif starts and line.strip() and not line[0].isspace() and not EXPLICIT.match(line) and UNDERLINE.match(after):
            heading, skip = line.strip(), 2
        if heading:
            if title:
                found.append((title, body))
            else:
                preamble = body
            title, body = inline(heading), [*preamble]
            preamble = []
            i += skip
            continue
        body.append(line)
        i += 1
    if title:
        found.append((title, body))
    return found


def indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def dedent(lines: Sequence[str]) -> list[str]:
    margin = min((indent(line) for line in lines if line.strip()), default=0)
    return [line[margin:] if line.strip() else "" for line in lines]


def indented_end(lines: Sequence[str], start: int) -> int:
    """The end of the indented block (blank lines or lines indented past the margin) from ``start``."""
    end = start
    while end < len(lines) and (not lines[end].strip() or indent(lines[end]) > 0):
        end += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return end


def render(lines: Sequence[str]) -> list[str]:
    """Body lines (margin at column 0) as plain-text blocks: paragraphs, list items one a line, code verbatim."""
    blocks: list[str] = []
    literal = False  # the previous paragraph ended with "::": an indented block after it is code
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if indent(line) > 0:
            end = indented_end(lines, i)
            inner = dedent(lines[i:end])
            blocks.extend([code(inner)] if literal else render(inner))
            literal, i = False, end
            continue
        literal = False
        if EXPLICIT.match(line):
            end = indented_end(lines, i + 1)
            match = DIRECTIVE.match(line)
            if match:
                blocks.extend(directive(match["name"], (match["arg"] or "").strip(), lines[i + 1 : end]))
            i = end
            continue
        end = i
        while end < len(lines) and lines[end].strip():
            end += 1
        text, literal = paragraph(lines[i:end])
        if text:
            blocks.append(text)
        i = end
    return [block for block in blocks if block]


def paragraph(lines: Sequence[str]) -> tuple[str, bool]:
    """A paragraph as text (list items and definition-list terms each start a line) and whether it ends in ``::``."""
    if len(lines) == 1 and UNDERLINE.match(lines[0]):
        return "", False  # a transition
    rows = list(lines)
    literal = rows[-1].rstrip().endswith("::")
    if literal:
        last = rows[-1].rstrip()
        rows[-1] = last[:-2].rstrip() if last == "::" or last.endswith(" ::") else last[:-1]
    base = indent(rows[0])
    definitions = not ITEM.match(rows[0].lstrip()) and len(rows) > 1 and indent(rows[1]) > base
    out: list[str] = []
    for row in rows:
        stripped = row.strip()
        if not stripped:
            continue
        term = definitions and indent(row) == base
        if not out or ITEM.match(stripped) or term:
            out.append(stripped + (":" if term and not stripped.endswith(":") else ""))
        else:
            out[-1] += " " + stripped
    return "\n".join(re.sub(r"\s+", " ", inline(row)).strip() for row in out).strip(), literal


def code(lines: Sequence[str]) -> str:
    return "\n".join(line.rstrip() for line in dedent(lines)).strip("\n")


def directive(name: str, argument: str, body: Sequence[str]) -> list[str]:
    """A directive as the built manual shows it (``body``: its indented lines, options included)."""
    lines = dedent(body)
    while lines and OPTION.match(lines[0]):
        lines.pop(0)
    if name in CODE_DIRECTIVES:
        text = code(lines)
        return [text] if text.strip() else []
    blocks: list[str] = []
    label = ""
    if name in PREFIXED:
        label = PREFIXED[name]
        if argument:
            lines = [argument, *lines]
    elif name in VERSIONED:
        version, _, rest = argument.partition(" ")
        label = f"{VERSIONED[name]} {version}."
        if rest:
            lines = [rest, *lines]
    elif name == "admonition":
        blocks.append(inline(argument))
    elif name in TABS:
        label = inline(argument) + ":" if argument else ""
    elif name not in CONTAINERS:
        return []  # click:run invocations, autodoc, toctree, images, includes, currentmodule...
    blocks.extend(render(lines))
    if label:
        if blocks and "\n" not in blocks[0] and not blocks[0].startswith(" "):
            blocks[0] = f"{label} {blocks[0]}"
        else:
            blocks.insert(0, label)
    return blocks


def inline(text: str) -> str:
    """Inline markup removed: roles keep their text, links their title, literals and emphasis their content."""
    return INLINE.sub(_inline_one, text)


def _inline_one(match: re.Match[str]) -> str:
    groups = match.groupdict()
    if groups["lit"] is not None:
        return groups["lit"]
    if groups["rtext"] is not None:
        role, text = groups["role"], groups["rtext"].strip()
        titled = TITLED.match(text)
        if titled and titled["title"]:
            return titled["title"]
        if titled:
            text = titled["target"]
        if role == "pep":
            return f"PEP {text}"
        text = text.lstrip("!")
        if text.startswith("~"):
            text = text[1:].rsplit(".", 1)[-1]
        return text.lstrip("/")
    if groups["url"] is not None:
        return groups["ltext"] or groups["url"]
    if groups["escaped"] is not None:
        return "" if groups["escaped"] == " " else groups["escaped"]
    for name in ("itext", "strong", "em", "ref"):
        if groups[name] is not None:
            return groups[name]
    return match.group(0)


def pack(title: str, blocks: Sequence[str]) -> list[str]:
    """``title`` and its blocks as passages of at most ``MAX_CHARS``: whole blocks while they fit, then a new
    passage under the same title; a block longer than a passage is split at lines, a line at words."""
    title = title[:200]
    budget = MAX_CHARS - len(title) - 2
    pieces = [piece for block in blocks for piece in fit(block, budget)]
    groups: list[list[str]] = []
    size = 0
    for piece in pieces:
        if groups and size + 2 + len(piece) <= budget:
            groups[-1].append(piece)
            size += 2 + len(piece)
        else:
            groups.append([piece])
            size = len(piece)
    return [f"{title}\n\n" + "\n\n".join(group) for group in groups]


def fit(block: str, budget: int) -> list[str]:
    if len(block) <= budget:
        return [block]
    separator = "\n" if "\n" in block else " "
    parts = block.split("\n") if separator == "\n" else block.split(" ")
    out: list[str] = []
    for part in parts:
        if len(part) > budget:
            out.extend(
                fit(part, budget) if " " in part else [part[k : k + budget] for k in range(0, len(part), budget)]
            )
        elif out and len(out[-1]) + len(separator) + len(part) <= budget:
            out[-1] += separator + part
        else:
            out.append(part)
    return out


def questions_check(passages: Sequence[tuple[str, bytes]], questions: dict[str, Any]) -> list[str]:
    """What is wrong with the questions against these passages: an answerable one whose evidence is not in
    its named passage, an unanswerable one whose absent term is found ([] when nothing is)."""
    texts = {name: data.decode() for name, data in passages}
    problems = [
        f"{item['id']}: evidence not in {item['passage']}"
        for item in questions["answerable"]
        if item["evidence"] not in texts.get(item["passage"], "")
    ]
    for item in questions["unanswerable"]:
        for term in item.get("absent_terms", []):
            if any(re.search(term, text, re.IGNORECASE) for text in texts.values()):
                problems.append(f"{item['id']}: {term!r} found")
    return problems


def main() -> int:
    base = Path(__file__).resolve().parent.parent
    archive = docs_fetch(base / "var" / "docs-corpus")
    passages = docs_passages(archive)
    chars = sum(len(text.decode()) for _, text in passages)
    print(f"{PACKAGE} {VERSION} ({LICENCE}): {len(passages)} passages, {chars} characters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
