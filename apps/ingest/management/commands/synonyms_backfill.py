from typing import Any

from django.conf import settings
from django.core.management.base import CommandParser

from apps.core.commands import ProjectCommand
from apps.graph.driver import get_driver
from apps.ingest.synonyms import SynonymParams, synonyms_backfill
from apps.models.registry import text_embedder


class Command(ProjectCommand):
    help = (
        "Give the entities of a graph written before names had vectors their name vector and synonym edges "
        "(GRAPH_SYNONYM_K nearest names at least GRAPH_SYNONYM_MIN_SCORE close); new documents do this as they come in."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch", type=int, default=500, help="entities embedded per round (default 500)")

    def handle(self, *args: Any, **options: Any) -> None:
        params = SynonymParams(k=settings.GRAPH_SYNONYM_K, min_score=settings.GRAPH_SYNONYM_MIN_SCORE)
        if params.k <= 0:
            self.stdout.write("GRAPH_SYNONYM_K is 0: synonym edges are off, nothing to do")
            return
        embedded, edges = synonyms_backfill(
            driver=get_driver(), embed=text_embedder().embed_documents, params=params, batch=max(1, options["batch"])
        )
        self.stdout.write(self.style.SUCCESS(f"{embedded} entities embedded, {edges} synonym edges suggested"))
