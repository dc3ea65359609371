import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.answers.scope import EVERY_COLLECTION
from apps.answers.services import answer_ask
from apps.answers.tools import default_tools, retrieval_params
from apps.answers.types import AnswerError
from apps.core.admission import Busy
from apps.core.commands import ProjectCommand


class Command(ProjectCommand):
    help = "Answer a question from the knowledge graph (generation runs on the gpu queue's worker)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("question")
        parser.add_argument("--collection", action="append", dest="collections", help="only this collection (repeat)")
        parser.add_argument("--no-generate", action="store_true", help="retrieval only: the ranked evidence")
        parser.add_argument(
            "--mode", choices=("graph", "dense"), default="graph", help="graph expansion, or FAISS only"
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = answer_ask(
                question=options["question"],
                # The command line is the operator's: every collection unless told which.
                collections=options["collections"] or EVERY_COLLECTION,
                generate=not options["no_generate"],
                mode=options["mode"],
                user=None,
                tools=default_tools(),
                params=retrieval_params(mode=options["mode"]),
            )
        except Busy as exc:  # the generation queue is full: nothing was recorded
            if options["json"]:
                self.stdout.write(json.dumps({"error": exc.message, "stage": "admission"}))
                raise SystemExit(1) from exc
            raise CommandError(exc.message) from exc
        except AnswerError as exc:
            if options["json"]:
                self.stdout.write(json.dumps({"error": exc.message, "stage": exc.stage}))
                raise SystemExit(1) from exc
            raise CommandError(exc.message) from exc
        if options["json"]:
            self.stdout.write(json.dumps(result, ensure_ascii=False))
        else:
            self._write(result)
        if result["state"] == "failed":
            raise SystemExit(1)

    def _write(self, result: dict[str, Any]) -> None:
        if result["answer"]:
            self.stdout.write(result["answer"] + "\n")
        if result["reason"]:
            self.stdout.write(f"(not found: {result['reason']})")
        if result["error"]:
            self.stderr.write(result["error"])
        for source in result["sources"]:
            text = " ".join(source["text"].split())
            self.stdout.write(
                f"[{source['number']}] {source['score']:.3f} {source['kind']} {source['document']}: {text[:160]}"
            )
        timings = "  ".join(f"{stage} {ms:.1f}" for stage, ms in result["timings_ms"].items())
        self.stdout.write(f"ms: {timings}   answer {result['answer_id']}")
