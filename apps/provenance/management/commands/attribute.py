import json
import time
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import CommandError, CommandParser

from apps.answers.models import Answer
from apps.core.commands import ProjectCommand
from apps.models.registry import generator
from apps.provenance.models import AttributionRecord, ExactRun
from apps.provenance.runs import exact_request
from apps.provenance.services import ProvenanceError, answer_attribute_exact, answer_reattribute, record_summary
from apps.provenance.types import EXACT, FAST


class Command(ProjectCommand):
    help = (
        "Attribute an answer's tokens to its source sentences: fast mode again (in this process), or exact "
        "mode (context ablation) on the attribution worker, reported next to the fast scores."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("answer_id")
        parser.add_argument("--exact", action="store_true", help="context ablation (many forward passes)")
        parser.add_argument("--here", action="store_true", help="run exact mode in this process, not on the worker")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            answer = Answer.objects.get(id=options["answer_id"])
        except (Answer.DoesNotExist, ValidationError) as exc:
            raise CommandError(f"no answer {options['answer_id']!r}") from exc
        if answer.state != Answer.DONE or not answer.generated:
            raise CommandError("only a finished, generated answer can be attributed")
        if not options["exact"]:
            answer_reattribute(answer, generator())
        elif options["here"]:
            answer_attribute_exact(answer, generator())
        else:
            self._exact_on_worker(answer)
        summaries = {record.mode: record_summary(record) for record in AttributionRecord.objects.filter(answer=answer)}
        wanted = {mode: summaries[mode] for mode in (FAST, EXACT) if mode in summaries}
        if options["json"]:
            self.stdout.write(json.dumps({"answer_id": str(answer.id), **wanted}))
            return
        for mode, summary in wanted.items():
            self.stdout.write(
                f"{mode}: {summary['method']} on {summary['model']}, {summary['tokens']} tokens, "
                f"{summary['forward_passes']} forward passes, {summary['seconds']:.2f} s"
            )
            if "agreement" in summary["summary"]:
                agreement = summary["summary"]["agreement"]
                self.stdout.write(
                    f"  agreement with fast mode over {agreement['tokens']} tokens: top-1 "
                    f"{agreement['top1_agreement']:.0%}, "
                    f"fast top-1 within exact top-3 {agreement['top1_in_exact_top3']:.0%}"
                )

    def _exact_on_worker(self, answer: Answer) -> None:
        """Queue exact mode and wait for its run to end (a previous exact record is replaced when it is done)."""
        try:
            run = exact_request(answer)
        except ProvenanceError as exc:
            raise CommandError(str(exc)) from exc
        deadline = time.monotonic() + settings.PROVENANCE_EXACT_TIMEOUT
        while run.active:
            if time.monotonic() > deadline:
                raise CommandError(
                    f"exact attribution did not finish within {settings.PROVENANCE_EXACT_TIMEOUT} s "
                    f"({run.state}, {run.done}/{run.total} passes); is a worker consuming the "
                    f"'{settings.PROVENANCE_EXACT_QUEUE}' queue? --here runs it in this process"
                )
            time.sleep(0.5)
            run.refresh_from_db()
        if run.state != ExactRun.DONE:
            raise CommandError(f"exact attribution {run.state}" + (f": {run.error}" if run.error else ""))
