import json
import uuid
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.core.commands import ProjectCommand
from apps.ingest.models import IngestJob
from apps.ingest.selectors import job_summary


class Command(ProjectCommand):
    help = "Show one ingestion job (exit 1 if it failed), or list the most recent ones."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("job_id", nargs="?", metavar="JOB_ID")
        parser.add_argument("--limit", type=int, default=20, help="how many recent jobs to list")
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["job_id"] is None:
            jobs = list(IngestJob.objects.all()[: max(1, options["limit"])])
            if options["json"]:
                self.stdout.write(json.dumps([job_summary(job=job) for job in jobs], indent=2))
            for job in [] if options["json"] else jobs:
                self.stdout.write(f"{job.id}  {job.state:<7} {job.percent:3d}%  {job.collection}  {job.stage}")
            return
        try:
            job = IngestJob.objects.get(id=uuid.UUID(options["job_id"]))
        except (ValueError, IngestJob.DoesNotExist) as exc:
            raise CommandError(f"no ingestion job with id {options['job_id']}") from exc
        summary = job_summary(job=job)
        if options["json"]:
            self.stdout.write(json.dumps(summary, indent=2))
        else:
            self.stdout.write(f"job {job.id}: {job.state} ({job.stage}, {job.percent}%, attempt {job.attempts})")
            if job.error:
                self.stdout.write(f"  error: {job.error}")
        if job.state == IngestJob.FAILED:
            raise SystemExit(1)
