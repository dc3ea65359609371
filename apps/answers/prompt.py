"""Stage 6, prompt assembly: the question and its numbered sources, in the generator's chat format."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from apps.answers.types import Prompt, Source

SYSTEM = (
    "You answer questions using only the numbered sources given. "
    "Answer briefly and precisely. If the sources do not contain the answer, say you do not know."
)
KIND_NAMES = {"chunk": "passage", "row": "table row", "image": "image description"}


def source_block(source: Source) -> str:
    """One numbered source; the document name on one line, so a name cannot fake another block."""
    document = " ".join(source.document.split())
    return f"[{source.number}] ({KIND_NAMES[source.kind]} from {document})\n{source.text.strip()}"


def prompt_assemble(*, question: str, sources: Sequence[Source], count_tokens: Callable[[str], int]) -> Prompt:
    """The user message lists every source in full, then the question."""
    blocks = "\n\n".join(source_block(source) for source in sources) or "(no sources were found)"
    user = f"Sources:\n\n{blocks}\n\nQuestion: {question.strip()}\nAnswer:"
    return Prompt(system=SYSTEM, user=user, sources=tuple(sources), tokens=count_tokens(SYSTEM) + count_tokens(user))
