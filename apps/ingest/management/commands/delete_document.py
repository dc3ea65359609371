from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.core.commands import ProjectCommand
from apps.graph.driver import get_driver
from apps.ingest.services import document_delete


class Command(ProjectCommand):
    help = "Delete a document and every node and relation that only it supported."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("document_id")

    def handle(self, *args: Any, **options: Any) -> None:
        if not document_delete(driver=get_driver(), document_id=options["document_id"]):
            raise CommandError(f"no document with id {options['document_id']}")
        self.stdout.write(self.style.SUCCESS(f"deleted document {options['document_id']}"))
