from typing import Any

from apps.core.commands import ProjectCommand
from apps.graph.driver import get_driver
from apps.graph.schema import graph_schema_apply


class Command(ProjectCommand):
    help = "Create the knowledge graph's constraints and indexes in Neo4j (idempotent)."

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
