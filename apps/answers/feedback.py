"""Readers' feedback on answers: thumbs up or down with an optional note, one per answer and reader,
changed by voting again. Curators list it (``apps.curation.pages.feedback_listing``)."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser, User

from apps.answers.models import Answer, Feedback


class FeedbackError(ValueError):
    """The feedback cannot be taken (the message says why, in words a reader understands)."""


@dataclass(frozen=True)
class Verdict:
    vote: str
    note: str


def feedback_check(vote: str, note: str) -> Verdict:
    """The vote (``up`` or ``down``) and note as stored, or a FeedbackError."""
    if vote not in (Feedback.UP, Feedback.DOWN):
        raise FeedbackError("Choose thumbs up or thumbs down.")
    text = note.strip()
    if len(text) > Feedback.NOTE_CHARS:
        raise FeedbackError(f"The note is {len(text):,} characters long; at most {Feedback.NOTE_CHARS:,} are kept.")
    if "\x00" in text:
        raise FeedbackError("The note must not contain NUL characters.")
    return Verdict(vote, text)


def _owner(user: AbstractBaseUser | AnonymousUser) -> User | None:
    return user if isinstance(user, User) and user.is_authenticated else None


def feedback_of(answer: Answer, user: AbstractBaseUser | AnonymousUser) -> Feedback | None:
    """This reader's feedback on the answer, if any."""
    return Feedback.objects.filter(answer=answer, user=_owner(user)).first()


def feedback_record(*, answer: Answer, user: AbstractBaseUser | AnonymousUser, verdict: Verdict) -> Feedback:
    """Store the reader's verdict on the answer (replacing an earlier one of theirs)."""
    feedback, _ = Feedback.objects.update_or_create(
        answer=answer, user=_owner(user), defaults={"vote": verdict.vote, "note": verdict.note}
    )
    return feedback
