import json
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.backup.manifest import BackupError
from apps.backup.services import backup_create
from apps.core.commands import ProjectCommand
from apps.graph.driver import get_driver


class Command(ProjectCommand):
    help = "Write a backup of the database, graph, vector indexes and chain state (docs/backup.md)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("target", help="a new folder, or a file name ending in .tar")
        parser.add_argument("--json", action="store_true", help="print the manifest as JSON")
        parser.add_argument(
            "--portable", action="store_true", help="write the database as Django JSON even when it is SQLite"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        target = Path(options["target"])
        try:
            manifest = backup_create(driver=get_driver(), target=target, portable=options["portable"])
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(manifest.as_json())
            return
        self.stdout.write(
            self.style.SUCCESS(
                f"backup written to {target}: {manifest.graph['nodes']} nodes, "
                f"{manifest.graph['relationships']} relationships, {manifest.ledger['entries']} ledger entries, "
                f"vectors {json.dumps(manifest.vectors)}, {len(manifest.files)} files"
            )
        )
