from typing import Any

from django.core.management.base import BaseCommand

from apps.graph.driver import get_driver
from apps.graph.schema import graph_schema_apply


class Command(BaseCommand):
    help = "Create the knowledge graph's constraints and indexes in Neo4j (idempotent)."
    # No system checks (apps/core/commands.py says why; the graph app imports no other app).
    requires_system_checks: list[str] = []

    def handle(self, *args: Any, **options: Any) -> None:
        report = graph_schema_apply(driver=get_driver())
        if options["verbosity"] > 1:
            for name in report.created:
                self.stdout.write(f"created  {name}")
            for name in report.existing:
                self.stdout.write(f"exists   {name}")
        self.stdout.write(
            self.style.SUCCESS(
                f"graph schema ready: {len(report.created)} created, {len(report.existing)} already present"
            )
        )
