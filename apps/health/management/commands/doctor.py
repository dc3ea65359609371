import json
from typing import Any

from django.core.management.base import CommandParser

from apps.core.commands import ProjectCommand
from apps.health.checks import CHECKS, run_checks


class Command(ProjectCommand):
    help = "Check every dependency (database, Neo4j, Redis, Celery, models) and say how to fix what is down."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--only", choices=list(CHECKS), action="append", help="check only this (repeatable)")

    def handle(self, *args: Any, **options: Any) -> None:
        results = run_checks(options["only"])
        healthy = all(result.ok for result in results)
        if options["json"]:
            body = {"status": "ok" if healthy else "degraded", "checks": {r.name: r.as_dict() for r in results}}
            self.stdout.write(json.dumps(body, indent=2))
        else:
            for result in results:
                mark = self.style.SUCCESS("ok  ") if result.ok else self.style.ERROR("DOWN")
                self.stdout.write(f"{result.name:<9} {mark} {result.detail}  ({result.elapsed_ms:.0f} ms)")
                if result.fix and not result.ok:
                    self.stdout.write(f"{'':<14} fix: {result.fix}")
            summary = "all services are up" if healthy else "some services are down"
            self.stdout.write(self.style.SUCCESS(summary) if healthy else self.style.ERROR(summary))
        if not healthy:
            raise SystemExit(1)
