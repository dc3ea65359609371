"""Collections in their own text spaces, against the real Neo4j and the real encoders: a Chinese
document goes to the multilingual space (auto), an English one stays in MiniLM's; one question over
both is answered from each collection in its own space; `vectors check` finds each space in step with
the graph; `vectors respace` moves one collection and nothing else."""
# ruff: noqa: RUF001 - Chinese text has full-width punctuation

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from neo4j import Driver
from pytest_django.fixtures import Settings

from apps.answers.pipeline import retrieve
from apps.answers.tools import default_tools, retrieval_params
from apps.ingest.services import default_extractor, upload_ingest
from apps.vectors.spaces import collection_spaces
from apps.vectors.store import store_ids

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

ZH = (
    "超级碗50\n\n黑豹队的防守只丢了 308 分，在联赛中排名第六，同时也以 24 次拦截领先国家橄榄球联盟。"
    "职业碗防守截锋卡万·肖特以 11 分领先于全队。\n\n"
    "华沙是波兰的首都和最大城市。它位于维斯瓦河畔，距波罗的海约 260 公里。"
)
EN = "Moss Society\n\nThe Moss Society is a learned society founded in 1903. Its first president was Gwendolyn Pryce."


@pytest.fixture(autouse=True)
def vectors_dir(tmp_path: Path, settings: Settings) -> None:
    settings.VECTORS_DIR = tmp_path / "vectors"
    settings.COLLECTION_SPACE = "auto"


def check(space: str) -> dict[str, object]:
    out = StringIO()
    call_command("vectors", "check", "--space", space, "--json", stdout=out)
    report: dict[str, object] = json.loads(out.getvalue())
    return report


def test_each_collection_is_searched_in_its_own_space(empty_graph: Driver) -> None:
    extractor = default_extractor()
    upload_ingest(driver=empty_graph, name="superbowl.txt", data=ZH.encode(), collection="zh-docs", extractor=extractor)
    upload_ingest(driver=empty_graph, name="moss.txt", data=EN.encode(), collection="en-docs", extractor=extractor)
    assert collection_spaces(["zh-docs", "en-docs"]) == {"zh-docs": "mtext", "en-docs": "text"}
    assert set(store_ids("mtext", {"zh-docs"}).values()) and not store_ids("text", {"zh-docs"})
    assert set(store_ids("text", {"en-docs"}).values()) and not store_ids("mtext", {"en-docs"})

    tools, params = default_tools(), retrieval_params(mode="graph")
    for question in ("黑豹队的防守丢了多少分？", "How many points did the Panthers defense give up?"):
        found = retrieve(question=question, collections=["zh-docs", "en-docs"], tools=tools, params=params)
        best = found.candidates[0]
        ranked = [(c.collection, c.space, round(c.rerank_score or 0, 3), round(c.score, 3)) for c in found.candidates]
        assert best.collection == "zh-docs" and best.space == "mtext" and "308" in best.text, (question, ranked)
    moss = retrieve(question="Who was the first president of the Moss Society?", collections=["zh-docs", "en-docs"],
                    tools=tools, params=params)  # fmt: skip
    assert moss.candidates[0].collection == "en-docs" and moss.candidates[0].space == "text"

    assert check("text")["ok"] and check("mtext")["ok"]

    out = StringIO()
    call_command("vectors", "respace", "--collection", "zh-docs", "--space", "text", stdout=out)
    assert "mtext -> text" in out.getvalue()
    assert collection_spaces(["zh-docs"]) == {"zh-docs": "text"}
    assert not store_ids("mtext", {"zh-docs"}) and store_ids("text", {"zh-docs"})
    assert set(store_ids("text", {"en-docs"}).values())  # the other collection is untouched
    assert check("text")["ok"] and check("mtext")["ok"]


def test_only_chinese_units_carry_the_text_of_the_cjk_index(empty_graph: Driver) -> None:
    extractor = default_extractor()
    upload_ingest(driver=empty_graph, name="superbowl.txt", data=ZH.encode(), collection="zh-docs", extractor=extractor)
    upload_ingest(driver=empty_graph, name="moss.txt", data=EN.encode(), collection="en-docs", extractor=extractor)
    rows = empty_graph.execute_query(
        "MATCH (c:Chunk) RETURN c.collection AS collection, c.text_cjk IS NOT NULL AS cjk, c.language AS language"
    ).records
    assert {(r["collection"], r["cjk"], r["language"]) for r in rows} == {
        ("zh-docs", True, "zh"),
        ("en-docs", False, "en"),
    }
