from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser

from apps.accounts.services import collection_ensure
from apps.core.commands import ProjectCommand
from apps.ingest.corpora import demo_files
from apps.ingest.jobs import job_create, job_wait
from apps.ingest.management.commands.ingest import progress_bar
from apps.ingest.models import Document


class Command(ProjectCommand):
    help = (
        "Load the demo corpus (HotpotQA passages, images, tables from ../shared/data) into collection 'demo', "
        "which everyone may read."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--data-dir", default=None, help="default: RAGKG_DEMO_DATA_DIR")
        parser.add_argument("--wait", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        data_dir = Path(options["data_dir"] or settings.DEMO_DATA_DIR)
        if not (data_dir / "multihop").is_dir():
            raise CommandError(f"no demo data at {data_dir} (set RAGKG_DEMO_DATA_DIR)")
        files = demo_files(data_dir)
        collection_ensure(name="demo", public=True)
        if Document.objects.filter(collection="demo").count() >= len(files):
            self.stdout.write(f"demo corpus already loaded ({len(files)} files)")
            return
        self.stdout.write(f"loading the demo corpus: {len(files)} files from {data_dir}")
        job = job_create(collection="demo", uploads=files, public=True)
        if not options["wait"]:
            self.stdout.write(f"job {job.id} queued; follow it at /curation/jobs/{job.id}/")
            return
        job = job_wait(job_id=str(job.id), timeout=3600, on_progress=progress_bar)
        self.stdout.write(
            f"\ndemo corpus: {job.state}; " + ", ".join(f"{k} {v}" for k, v in sorted(job.counts.items()))
        )
        if job.state != "done":
            raise CommandError(f"demo corpus: {job.error}")
