"""Migration answers.0007: answers stored before "not found" had its own state are moved to it, and back."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.answers.prompt import NOT_FOUND
from apps.answers.services import NOTHING_FOUND

BEFORE = [("answers", "0006_answer_cache_key_answer_log_position")]
AFTER = [("answers", "0007_answer_not_found_state")]
WEAK = "The sources found do not cover the question (best match 0.21, 30% of its words found)."


def migrated(target: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    executor.loader.build_graph()
    return executor.loader.project_state(target).apps


@pytest.mark.django_db(transaction=True)
def test_old_not_found_and_nothing_found_answers_become_the_not_found_state() -> None:
    old = migrated(BEFORE).get_model("answers", "Answer")
    weak = old.objects.create(question="Who?", state="done", not_found=True, answer=NOT_FOUND, error=WEAK)
    nothing = old.objects.create(question="Where?", state="failed", error=NOTHING_FOUND)
    fault = old.objects.create(question="When?", state="failed", error="No generation worker picked up the question.")
    answered = old.objects.create(question="What?", state="done", answer="A moss [1].")
    try:
        new = migrated(AFTER).get_model("answers", "Answer")
        rows = {a.id: (a.state, a.reason, a.error, a.answer) for a in new.objects.all()}
        assert rows[weak.id] == ("not_found", WEAK, "", NOT_FOUND)
        assert rows[nothing.id] == ("not_found", NOTHING_FOUND, "", NOT_FOUND)
        assert rows[fault.id][:3] == ("failed", "", "No generation worker picked up the question.")
        assert rows[answered.id] == ("done", "", "", "A moss [1].")
        back = migrated(BEFORE).get_model("answers", "Answer")
        assert back.objects.get(id=weak.id).not_found and back.objects.get(id=weak.id).error == WEAK
        assert back.objects.get(id=nothing.id).state == "done" and back.objects.get(id=fault.id).state == "failed"
    finally:
        migrated([("answers", leaf) for app, leaf in MigrationExecutor(connection).loader.graph.leaf_nodes("answers")])
