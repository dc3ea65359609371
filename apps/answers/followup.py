"""Follow-up questions: a question that is short or points back ("When was it founded?") is asked
together with the question before it ("<previous> <follow-up>"), so retrieval finds what it is about;
a question that stands on its own is asked as it is. Used by the search page's follow-up form and the
OpenAI-compatible chat (earlier user messages)."""

from __future__ import annotations

import re
from typing import Final

from apps.answers.services import MAX_QUESTION_CHARS

REFERS_BACK: Final = frozenset(
    {"it", "its", "it's", "itself", "they", "them", "their", "theirs", "themselves", "he", "him", "his"}
    | {"she", "her", "hers", "there", "those", "these", "former", "latter"}
)
SHORT_WORDS: Final = 3
WORD = re.compile(r"[A-Za-z']+")


def refers_back(text: str) -> bool:
    """Whether a follow-up needs the turn before it: at most SHORT_WORDS words, or a pronoun or
    "there"/"those" that points back."""
    words = [word.lower() for word in WORD.findall(text)]
    return len(words) <= SHORT_WORDS or any(word in REFERS_BACK for word in words)


def follow_up(previous: str, question: str) -> str:
    """The text to ask for ``question`` after ``previous``: both when the question refers back (and
    together they fit the question limit), else the question alone."""
    question, previous = " ".join(question.split()), " ".join(previous.split())
    if not previous or not refers_back(question):
        return question
    conditioned = f"{previous} {question}"
    return conditioned if len(conditioned) <= MAX_QUESTION_CHARS else question
