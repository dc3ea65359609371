""""Not found" becomes its own state with its reason in its own field.

Before: a weak-evidence answer was ``done`` with ``not_found`` set and its reason in ``error``; a question
nothing matched was ``failed`` with the NOTHING_FOUND message in ``error``. Both become ``not_found`` with
the message in ``reason`` (and the not-found text as the answer when it had none)."""

from typing import Any

from django.db import migrations, models

NOTHING_FOUND = "Nothing in the knowledge base matches the question, so there is nothing to answer from."


def forward(apps: Any, schema_editor: Any) -> None:
    from apps.answers.prompt import not_found_text

    answer_model = apps.get_model("answers", "Answer")
    for answer in answer_model.objects.filter(state="done", not_found=True).only("id", "error"):
        answer_model.objects.filter(id=answer.id).update(state="not_found", reason=answer.error, error="")
    for answer in answer_model.objects.filter(state="failed", error=NOTHING_FOUND).only("id", "question"):
        answer_model.objects.filter(id=answer.id).update(
            state="not_found", reason=NOTHING_FOUND, error="", answer=not_found_text(answer.question)
        )


def backward(apps: Any, schema_editor: Any) -> None:
    answer_model = apps.get_model("answers", "Answer")
    for answer in answer_model.objects.filter(state="not_found").only("id", "reason"):
        answer_model.objects.filter(id=answer.id).update(state="done", not_found=True, error=answer.reason)


class Migration(migrations.Migration):
    dependencies = [("answers", "0006_answer_cache_key_answer_log_position")]

    operations = [
        migrations.AddField(model_name="answer", name="reason", field=models.TextField(blank=True)),
        migrations.AlterField(
            model_name="answer",
            name="state",
            field=models.CharField(
                choices=[
                    ("retrieved", "retrieved"),
                    ("generating", "generating"),
                    ("done", "done"),
                    ("not_found", "not found"),
                    ("failed", "failed"),
                ],
                db_index=True,
                default="retrieved",
                max_length=12,
            ),
        ),
        migrations.RunPython(forward, backward),
        migrations.RemoveField(model_name="answer", name="not_found"),
    ]
