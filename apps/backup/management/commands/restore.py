from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.backup.manifest import BackupError
from apps.backup.services import backup_restore
from apps.core.commands import ProjectCommand
from apps.graph.driver import get_driver


class Command(ProjectCommand):
    help = "Restore a backup written by `manage.py backup`, then check the result (docs/backup.md)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("source", help="the backup folder or .tar file")
        parser.add_argument("--force", action="store_true", help="replace the data that is there")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = backup_restore(driver=get_driver(), source=Path(options["source"]), force=options["force"])
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"restored {options['source']} (taken {report.manifest.created_at}) in {report.seconds}s")
        self.stdout.write("steps: " + ", ".join(f"{name} {seconds}s" for name, seconds in report.steps.items()))
        for name, ok, detail in report.checks:
            self.stdout.write(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}")
        if not report.ok:
            raise CommandError("the restored data does not pass its checks", returncode=1)
        self.stdout.write(self.style.SUCCESS("restore checked: ok"))
