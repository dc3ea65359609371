"""A question the documents do not answer is "not found", an answer in its own state, through every door:
the search page, the REST API (whole and streamed), the OpenAI-compatible chat API (the official
``openai`` package: a normal completion with the refusal text), the MCP server (the SDK's client) and
``manage.py ask``; then the asker's history and the audit page show it as "not found" with its reason.

The real stack (web server, Celery worker, Neo4j, chain): one small document in the reader's collection,
made through ``manage.py shell`` as an operator would (the web server uses the test database under var/test)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import anyio
import httpx2
import openai
import pytest
import requests
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from apps.answers.prompt import NOT_FOUND
from tests.conftest import web_server_running
from tests.support import manage

pytestmark = pytest.mark.integration

TEXT = "The Quillfeather Observatory on Skerrow Island was built in 1893 by the astronomer Maren Holt."
OUT_OF_SCOPE = "What temperature does liquid nitrogen boil at under normal pressure?"
PASSWORD = "not-found-doors-password"
NOT_COVERED = "do not cover the question"  # apps.answers.services.WEAK_EVIDENCE

SETUP_SCRIPT = """
import json, os
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from apps.accounts.apikeys import key_create
from apps.accounts.services import collection_ensure
from apps.ingest.jobs import job_create, job_wait
reader = get_user_model().objects.create_user(os.environ["READER"], password=os.environ["PASSWORD"])
reader.groups.add(Group.objects.get_or_create(name="auditor")[0])
collection_ensure(name=os.environ["MINE"], owner=reader)
upload = ("observatory.txt", os.environ["TEXT"].encode())
job = job_wait(job_id=str(job_create(collection=os.environ["MINE"], uploads=[upload]).id), timeout=240)
assert job.results[0]["status"] == "created", job.results
print(json.dumps({"key": key_create(user=reader).secret}))
"""


@dataclass(frozen=True)
class Stack:
    web: str
    reader: str
    key: str
    mine: str


@pytest.fixture(scope="module")
def stack(live_services: None) -> Iterator[Stack]:
    tag = uuid.uuid4().hex[:8]
    names = {"READER": f"nf-{tag}", "MINE": f"nf-mine-{tag}"}
    made = manage("shell", "-c", SETUP_SCRIPT, TEXT=TEXT, PASSWORD=PASSWORD, **names)
    assert made.returncode == 0, made.stdout + made.stderr
    key = json.loads(made.stdout.strip().splitlines()[-1])["key"]
    with web_server_running() as web:
        yield Stack(web=web, reader=names["READER"], key=key, mine=names["MINE"])


def assert_not_found(result: dict[str, Any]) -> None:
    assert result["state"] == "not_found" and result["not_found"] is True, result
    assert result["answer"] == NOT_FOUND and NOT_COVERED in result["reason"] and result["error"] == ""
    assert result["sources"], "the closest sources are still shown"


def rest_ask(stack: Stack, *, stream: bool) -> requests.Response:
    return requests.post(
        f"{stack.web}/api/v1/ask",
        json={"question": OUT_OF_SCOPE, "collections": [stack.mine], "stream": stream},
        headers={"Authorization": f"Bearer {stack.key}"},
        timeout=300,
    )


def mcp_ask(stack: Stack) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {stack.key}"}
        http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300))
        async with http, Client(streamable_http_client(f"{stack.web}/mcp", http_client=http)) as client:
            result = await client.call_tool("ask", {"question": OUT_OF_SCOPE, "collections": [stack.mine]})
        assert not result.is_error, result.content
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    return anyio.run(run)


def logged_in(stack: Stack) -> tuple[requests.Session, str]:
    """A browser's session of the reader, and a fresh CSRF token."""
    session = requests.Session()
    login = f"{stack.web}/accounts/login/"
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', session.get(login, timeout=30).text)
    assert token
    response = session.post(
        login,
        data={"username": stack.reader, "password": PASSWORD, "csrfmiddlewaretoken": token.group(1)},
        headers={"Referer": login},
        allow_redirects=False,
        timeout=30,
    )
    assert response.status_code == 302, response.text[:500]
    page = session.get(f"{stack.web}/", timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token
    return session, token.group(1)


def test_an_out_of_scope_question_is_not_found_through_every_door(stack: Stack) -> None:
    whole = rest_ask(stack, stream=False)
    assert whole.status_code == 200, whole.text[:800]
    assert_not_found(whole.json())

    streamed = rest_ask(stack, stream=True)
    assert streamed.status_code == 200 and streamed.headers["Content-Type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in streamed.text.splitlines() if line.strip()]
    assert lines[-1]["event"] == "done" and not any(line["event"] == "error" for line in lines)
    assert_not_found(lines[-1])

    chat = openai.OpenAI(base_url=f"{stack.web}/v1", api_key=stack.key, max_retries=0, timeout=300)
    reply = chat.chat.completions.create(
        model="ragkg", messages=[{"role": "user", "content": OUT_OF_SCOPE}], extra_body={"collections": [stack.mine]}
    )
    assert reply.choices[0].message.content == NOT_FOUND and reply.choices[0].finish_reason == "stop"
    citations = cast(dict[str, Any], reply.to_dict()["citations"])
    assert citations["state"] == "not_found" and NOT_COVERED in citations["reason"]

    tool = mcp_ask(stack)
    assert tool["state"] == "not_found" and tool["not_found"] is True and tool["answer"] == NOT_FOUND
    assert NOT_COVERED in tool["reason"] and tool["note"] == ""

    asked = manage("ask", OUT_OF_SCOPE, "--collection", stack.mine, "--json")
    assert asked.returncode == 0, asked.stdout + asked.stderr
    assert_not_found(json.loads(asked.stdout.strip().splitlines()[-1]))

    session, token = logged_in(stack)
    page = session.post(
        f"{stack.web}/",
        data={"csrfmiddlewaretoken": token, "question": OUT_OF_SCOPE, "collection": stack.mine},
        headers={"Referer": f"{stack.web}/"},
        timeout=300,
    )
    assert page.status_code == 200 and NOT_FOUND in page.text and NOT_COVERED in page.text
    assert 'role="alert"' not in page.text, "not found is an answer, not a fault"

    history = session.get(f"{stack.web}/history/", timeout=30).text
    assert history.count("not found") >= 5, "the questions asked through every door, each not found"
    audit = session.get(f"{stack.web}/audit/answers/{whole.json()['answer_id']}/", timeout=30)
    assert audit.status_code == 200 and "not found" in audit.text and NOT_COVERED in audit.text
