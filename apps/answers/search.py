"""The search pages: ``/`` (also ``/ask/``), an answer's page ``/ask/<id>/``, its token stream
``/ask/<id>/stream`` and the asker's history ``/history/``.

Without JavaScript the question form posts and the page comes back with the whole answer. With
htmx the server retrieves, queues the generation and returns the sources at once with an answer
area that ``static/answers/search.js`` fills from the Server-Sent Events stream; when the stream
ends the script fetches the finished answer (the same templates). Only the collections the asker
can read are searched (``answer_scope``); only the asker (or, for an anonymous question, the same
browser session; or an admin) may open an answer's page or stream.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.accounts.access import readable_collections
from apps.accounts.models import Collection
from apps.answers import services, streams
from apps.answers.access import SESSION_KEY, answer_for, answer_remember, answer_visible
from apps.answers.etag import answer_etag, etag_respond, page_state
from apps.answers.examples import example_questions
from apps.answers.feedback import FeedbackError, feedback_check, feedback_of, feedback_record
from apps.answers.followup import follow_up
from apps.answers.generation import answer_stop
from apps.answers.images import images_search
from apps.answers.models import Answer
from apps.answers.pages import answer_context, answer_streaming
from apps.answers.scope import Scope, answer_scope
from apps.answers.tools import default_tools, retrieval_params
from apps.answers.types import AnswerError
from apps.core.http import HtmxHttpRequest
from apps.graph.driver import get_driver
from apps.ingest.selectors import document_collections

TEMPLATE = "answers/search.html"
IMAGE_RESULTS = 24
HISTORY_PAGE = 20


ALL_READABLE = ""


class QuestionForm(forms.Form):
    # No maxlength on the field: a browser would cut a longer paste silently; the server refuses it
    # with a message instead (clean_question), and the text stays in the field.
    question = forms.CharField(
        widget=forms.TextInput(attrs={"autofocus": True, "type": "search"}),
        error_messages={"required": "Please type a question."},
    )
    collection = forms.ChoiceField(required=False, label="Collection", choices=())
    evidence_only = forms.BooleanField(required=False, label="Evidence only (no generated answer)")
    images = forms.BooleanField(required=False, label="Images (find pictures instead of answering)")
    previous = forms.UUIDField(required=False, widget=forms.HiddenInput)  # a follow-up: the answer it follows

    def __init__(self, *args: Any, collections: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [(ALL_READABLE, "All you can read"), *((name, name) for name in collections)]
        field = self.fields["collection"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = choices
        field.error_messages["invalid_choice"] = "%(value)s is not a collection you may read."

    def clean_question(self) -> str:
        text = str(self.cleaned_data["question"])
        length = len(" ".join(text.split()))
        if length > services.MAX_QUESTION_CHARS:
            raise forms.ValidationError(
                f"The question is {length:,} characters long; at most {services.MAX_QUESTION_CHARS:,} are "
                "accepted. Nothing was asked: shorten it and ask again."
            )
        return text


def picker_collections(readable: Sequence[str] | None) -> list[str]:
    """The collections of ``readable`` (None, admins: every one), and those holding documents among them."""
    names = set(document_collections(readable))
    names |= set(Collection.objects.values_list("name", flat=True)) if readable is None else set(readable)
    return sorted(names)


def question_form(data: Any = None, *, readable: Sequence[str] | None, **kwargs: Any) -> QuestionForm:
    """The question form, its picker listing the collections of ``readable`` (the asker's)."""
    return QuestionForm(data, collections=picker_collections(readable), **kwargs)


def form_errors(form: QuestionForm) -> str:
    """What was wrong with a refused question, in words."""
    messages = [str(message) for errors in form.errors.values() for message in errors]
    return " ".join(messages) or "Please type a question."


def _scope(request: HttpRequest, form: QuestionForm) -> Scope:
    collection = str(form.cleaned_data["collection"] or "").strip()
    return answer_scope(user=request.user, requested=[collection] if collection else None)


def _images(request: HttpRequest, form: QuestionForm) -> dict[str, Any]:
    tools = default_tools()
    results = images_search(
        query=form.cleaned_data["question"],
        collections=_scope(request, form),
        k=IMAGE_RESULTS,
        driver=tools.driver,
        text=tools.text,
        clip=tools.clip,
        search=tools.search,
    )
    return {"images": results, "images_searched": True}


def _asked(request: HttpRequest, form: QuestionForm) -> str:
    """The text to ask: the question, or for a follow-up (``previous``: an answer this reader may open)
    the question with the one before it when it refers back (``follow_up``)."""
    question = str(form.cleaned_data["question"])
    previous = (
        Answer.objects.filter(id=form.cleaned_data["previous"]).first() if form.cleaned_data["previous"] else None
    )
    if previous is None or not answer_visible(
        previous, user=request.user, session_answers=list(request.session.get(SESSION_KEY, []))
    ):
        return question
    return follow_up(previous.question, question)


def _ask(request: HtmxHttpRequest, form: QuestionForm) -> dict[str, Any]:
    """Ask; an htmx request gets the evidence now and streams the answer, a plain one waits for it."""
    options: dict[str, Any] = {
        "question": _asked(request, form),
        "collections": _scope(request, form),
        "generate": not form.cleaned_data["evidence_only"],
        "mode": "graph",
        "user": request.user if request.user.is_authenticated else None,
        "tools": default_tools(),
        "params": retrieval_params(mode="graph"),
    }
    if request.htmx:
        answer = services.answer_start(**options)
    else:
        answer = Answer.objects.get(id=services.answer_ask(**options)["answer_id"])
    answer_remember(request, answer)
    return answer_context(answer, user=request.user)


@require_http_methods(["GET", "POST"])
def search(request: HtmxHttpRequest) -> HttpResponse:
    prefill = request.GET.get("question", "")[: services.MAX_QUESTION_CHARS]
    readable = readable_collections(request.user)
    form = question_form(request.POST or None, readable=readable, initial={"question": prefill})
    context: dict[str, Any] = {"form": form}
    if not request.htmx:
        context["examples"] = example_questions(driver=get_driver(), collections=readable)
    status = 200
    if request.method == "POST":
        if not form.is_valid():
            context["error"] = form_errors(form)
        else:
            try:
                context.update(_images(request, form) if form.cleaned_data["images"] else _ask(request, form))
            except AnswerError as exc:
                context["error"] = exc.message
                # The whole page carries the error's status (503 when Neo4j or Redis is down); an htmx
                # swap keeps 200, since htmx does not swap an error response into the page.
                status = 200 if request.htmx else exc.status
    return render(request, f"{TEMPLATE}#results" if request.htmx else TEMPLATE, context, status=status)


@require_POST
def answer_feedback(request: HtmxHttpRequest, answer_id: uuid.UUID) -> HttpResponse:
    """Thumbs up or down on an answer the reader may see, with an optional note (``vote``, ``note``);
    voting again replaces the reader's earlier verdict. htmx gets the feedback form back, a plain
    post the answer's page."""
    answer = answer_for(request, answer_id)
    status = 200
    context: dict[str, Any] = {"answer": answer}
    try:
        verdict = feedback_check(request.POST.get("vote", ""), request.POST.get("note", ""))
    except FeedbackError as exc:
        context.update(feedback=feedback_of(answer, request.user), feedback_error=str(exc))
        status = 400
    else:
        context.update(feedback=feedback_record(answer=answer, user=request.user, verdict=verdict), thanked=True)
    if request.htmx:
        return render(request, f"{TEMPLATE}#feedback", context)
    if status == 400:
        page = {**answer_context(answer, user=request.user), **context}
        page["form"] = question_form(readable=readable_collections(request.user), initial={"question": answer.question})
        return render(request, TEMPLATE, page, status=status)
    return redirect("answer", answer_id=answer.id)


@require_POST
def answer_stop_view(request: HtmxHttpRequest, answer_id: uuid.UUID) -> HttpResponse:
    """The asker's "Stop": a queued answer fails at once, one being written stops at its next piece
    (the stream then ends with what was written). JSON for the page's script, else back to the answer."""
    answer = answer_for(request, answer_id)
    outcome = answer_stop(str(answer.id))
    if request.headers.get("Accept", "").startswith("application/json"):
        return JsonResponse({"state": outcome})
    return redirect("answer", answer_id=answer.id)


@require_GET
def answer_page(request: HtmxHttpRequest, answer_id: uuid.UUID) -> HttpResponseBase:
    """One answer: the whole page (with the answer's ETag: a matching If-None-Match gets 304), or (for
    htmx, when its stream ends) the answer fragment."""
    answer = answer_for(request, answer_id)
    if request.htmx:
        return render(request, f"{TEMPLATE}#result", answer_context(answer, user=request.user))

    def page() -> HttpResponse:
        form = question_form(
            readable=readable_collections(request.user),
            initial={"question": answer.question, "evidence_only": not answer.generate},
        )
        return render(request, TEMPLATE, {**answer_context(answer, user=request.user), "form": form})

    etag = answer_etag(services.answer_result(answer), extra=page_state(answer, request.user))
    return etag_respond(request, etag, page)


def _event(name: str, **data: Any) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _stream_events(answer: Answer) -> Iterator[str]:
    if answer_streaming(answer):
        for event, data in services.generation_events(answer):
            if event == streams.TOKEN:
                yield _event("token", text=str(data.get("text", "")))
            elif event == streams.GENERATED:
                yield _event("generated", text=str(data.get("answer", "")), not_found=bool(data.get("not_found")))
            elif event in streams.FINAL:
                break
        answer.refresh_from_db()
    if answer.state in Answer.FINISHED:
        yield _event("done")
    else:
        yield _event("error", message=answer.error or "The answer could not be generated.")


@require_GET
def answer_stream(request: HttpRequest, answer_id: uuid.UUID) -> StreamingHttpResponse:
    """The answer's tokens as Server-Sent Events: ``token`` events ({"text"}), ``generated`` (the final
    text, {"text", "not_found"}, sent before token attribution), then ``done`` or ``error``
    ({"message"}). A finished answer gets its final event at once."""
    answer = answer_for(request, answer_id)
    response = StreamingHttpResponse(_stream_events(answer), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


@login_required
@require_GET
def history(request: HttpRequest) -> HttpResponse:
    """The questions this user asked, newest first."""
    if not isinstance(request.user, User):  # login_required let only logged-in users through
        raise Http404("no history")
    answers = Answer.objects.filter(user=request.user).only(
        "id", "question", "state", "created_at", "generate", "answer", "error", "reason"
    )
    page = Paginator(answers, HISTORY_PAGE).get_page(request.GET.get("page"))
    return render(request, "answers/history.html", {"page": page})
