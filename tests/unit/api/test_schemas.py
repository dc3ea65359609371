"""The REST API's body schemas say exactly what the services accept: a collection name or a question
the pattern admits is one the service takes, and one it refuses the service refuses too."""

from __future__ import annotations

import jsonschema_rs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from apps.accounts.services import AccountsError, collection_name_check
from apps.answers.services import question_check
from apps.answers.types import AnswerError
from apps.api.schemas import SPACES, AskIn, CollectionIn, GrantIn

# Names and questions drawn from the characters that matter (whitespace of every kind, "/", NUL) and
# any others.
TEXT = st.text(alphabet=st.one_of(st.sampled_from(SPACES + "/\x00"), st.characters(codec="utf-8")), max_size=12)


def test_spaces_are_what_python_strips() -> None:
    assert "".join(char for char in map(chr, range(0x110000)) if char.isspace()) == SPACES


def _schema_accepts_name(name: str) -> bool:
    try:
        CollectionIn.model_validate({"name": name})
    except ValidationError:
        return False
    return True


def _service_accepts_name(name: str) -> bool:
    try:
        collection_name_check(name)
    except AccountsError:
        return False
    return "\x00" not in name  # NUL: refused by the schema alone (PostgreSQL cannot store it)


NAME_IN_DOCUMENT = jsonschema_rs.validator_for(CollectionIn.model_json_schema())
QUESTION_IN_DOCUMENT = jsonschema_rs.validator_for(AskIn.model_json_schema())


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_the_collection_name_schema_is_the_services_rule(name: str) -> None:
    """pydantic (what the API enforces), the JSON Schema as a client's validator reads it, and the service agree."""
    service = _service_accepts_name(name)
    assert _schema_accepts_name(name) == service, repr(name)
    assert NAME_IN_DOCUMENT.is_valid({"name": name}) == service, repr(name)


def _question_ok(question: str) -> bool:
    try:
        question_check(question)
    except AnswerError:
        return False
    return "\x00" not in question


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_the_question_schema_is_the_services_rule(question: str) -> None:
    try:
        AskIn.model_validate({"question": question})
        schema_ok = True
    except ValidationError:
        schema_ok = False
    assert schema_ok == _question_ok(question) == QUESTION_IN_DOCUMENT.is_valid({"question": question}), repr(question)


@pytest.mark.parametrize(
    "body",
    [{"public": 0, "name": "n"}, {"public": "true", "name": "n"}, {"name": 7}],
)
def test_bodies_are_taken_as_sent_without_coercion(body: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        CollectionIn.model_validate(body)


@pytest.mark.parametrize(
    "body, valid",
    [
        ({"user": "ana"}, True),
        ({"group": "team", "user": None}, True),
        ({}, False),
        ({"user": None, "group": None}, False),
        ({"user": "ana", "group": "team"}, False),
        ({"user": ""}, False),
    ],
)
def test_a_grant_names_exactly_one_user_or_group_as_its_schema_says(body: dict[str, object], valid: bool) -> None:
    assert jsonschema_rs.validator_for(GrantIn.model_json_schema()).is_valid(body) == valid
    try:
        GrantIn.model_validate(body)
        accepted = True
    except ValidationError:
        accepted = False
    assert accepted == valid
