import json
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser

from apps.accounts.services import AccountsError
from apps.core.commands import ProjectCommand
from apps.health.checks import check_celery
from apps.ingest.jobs import job_create, job_wait
from apps.ingest.models import IngestJob
from apps.ingest.selectors import job_summary


def collect_files(paths: list[str]) -> list[tuple[str, Path]]:
    """(shown name, file) for each path; directories are walked, names kept relative to them."""
    found: list[tuple[str, Path]] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(
                (str(file.relative_to(path.parent)), file) for file in sorted(path.rglob("*")) if file.is_file()
            )
        elif path.is_file():
            found.append((path.name, path))
        else:
            raise CommandError(f"no such file or directory: {raw}")
    return found


def progress_bar(job: IngestJob) -> None:
    filled = job.percent // 4
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (25 - filled)}] {job.percent:3d}% {job.stage[:60]:<60}")
    sys.stderr.flush()


class Command(ProjectCommand):
    help = "Ingest files (text, PDF, images, tables, zips) into the knowledge graph on the ingest queue."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH")
        parser.add_argument("--collection", default=None, help="collection name (default: RAGKG_DEFAULT_COLLECTION)")
        parser.add_argument(
            "--public", action="store_true", help="make the collection readable by everyone (default: private)"
        )
        parser.add_argument("--wait", action="store_true", help="wait for the job, showing a progress bar")
        parser.add_argument("--json", action="store_true", help="print the job as JSON")
        parser.add_argument("--timeout", type=float, default=3600.0, help="seconds --wait waits at most")

    def handle(self, *args: Any, **options: Any) -> None:
        files = collect_files(options["paths"])
        worker = check_celery()
        if not worker.ok:
            raise CommandError(f"no Celery worker can take the job: {worker.detail} (fix: {worker.fix})")
        collection = options["collection"] or settings.DEFAULT_COLLECTION
        try:
            job = job_create(
                collection=collection,
                uploads=[(name, path.read_bytes()) for name, path in files],
                public=True if options["public"] else None,
            )
        except AccountsError as exc:
            raise CommandError(str(exc)) from exc
        if options["wait"]:
            job = self.wait(job, timeout=options["timeout"], bar=not options["json"])
        if options["json"]:
            self.stdout.write(json.dumps(job_summary(job=job), indent=2))
        else:
            self.report(job)
        if job.state == IngestJob.FAILED:
            raise SystemExit(1)

    def wait(self, job: IngestJob, *, timeout: float, bar: bool) -> IngestJob:
        try:
            job = job_wait(job_id=str(job.id), timeout=timeout, on_progress=progress_bar if bar else None)
        except TimeoutError as exc:
            raise CommandError(str(exc)) from exc
        if bar:
            sys.stderr.write(f"\r[{'#' * 25}] 100% {job.state:<60}\n")
        return job

    def report(self, job: IngestJob) -> None:
        self.stdout.write(f"job {job.id}: {job.state}")
        for result in job.results:
            line = f"  {result['status']:<9} {result['path']}"
            if result.get("error"):
                line += f"  ({result['error_code']}: {result['error']})"
            self.stdout.write(line)
        if job.counts:
            self.stdout.write("  " + ", ".join(f"{key} {value}" for key, value in sorted(job.counts.items())))
