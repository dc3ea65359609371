"""Who may see an answer on the search pages (its page, its token stream, the history).

A logged-in asker's answer is theirs alone (admins see every answer); an anonymous asker's
answer belongs to the browser session that asked it: its id is remembered in the session. Any
other request gets a 404, exactly as for an answer that does not exist.
"""

from __future__ import annotations

import uuid

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.http import Http404, HttpRequest

from apps.accounts.roles import ADMIN, has_role
from apps.answers.generation import answers_unfinished_fail
from apps.answers.models import Answer

SESSION_KEY = "ragkg_answers"
SESSION_LIMIT = 50  # the anonymous session remembers its last answers only


def answer_remember(request: HttpRequest, answer: Answer) -> None:
    """Let this browser session open ``answer`` (its page and stream) while it lasts."""
    known = [value for value in request.session.get(SESSION_KEY, []) if value != str(answer.id)]
    request.session[SESSION_KEY] = [*known, str(answer.id)][-SESSION_LIMIT:]


def answer_visible(answer: Answer, *, user: AbstractBaseUser | AnonymousUser, session_answers: list[str]) -> bool:
    if has_role(user, ADMIN):
        return True
    if answer.user_id is not None:
        return bool(user.is_authenticated and answer.user_id == user.pk)
    return str(answer.id) in session_answers


def answer_for(request: HttpRequest, answer_id: uuid.UUID) -> Answer:
    """The answer if this request may see it; 404 otherwise."""
    answer = Answer.objects.filter(id=answer_id).first()
    if answer is None or not answer_visible(
        answer, user=request.user, session_answers=list(request.session.get(SESSION_KEY, []))
    ):
        raise Http404("no such answer")
    if answer.state in (Answer.RETRIEVED, Answer.GENERATING) and answers_unfinished_fail(answer_ids=[str(answer.id)]):
        answer.refresh_from_db()
    return answer
