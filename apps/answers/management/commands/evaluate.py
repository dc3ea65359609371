import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser

from apps.answers.evaluate import dataset_evaluate
from apps.answers.evaluation import DATASETS
from apps.answers.tools import default_tools, retrieval_params
from apps.core.commands import ProjectCommand
from apps.models.registry import generator


def _ks(value: str) -> list[int]:
    try:
        ks = sorted({int(part) for part in value.split(",") if part.strip()})
    except ValueError as exc:
        raise CommandError(f"--k takes numbers separated by commas, not {value!r}") from exc
    if not ks or ks[0] < 1:
        raise CommandError("--k needs at least one number, each 1 or more")
    return ks


class Command(ProjectCommand):
    help = (
        "Passage recall@k of dense (FAISS only) and graph retrieval on HotpotQA or MuSiQue "
        "(ingests the corpus if needed)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", choices=DATASETS, action="append", dest="datasets", help="repeat for both")
        parser.add_argument("--mode", choices=("dense", "graph", "both"), default="both")
        parser.add_argument("--k", default="2,5,10", help="cut-offs, e.g. 2,5,10")
        parser.add_argument("--generate", action="store_true", help="also generate answers: exact match and F1")
        parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        modes = ("dense", "graph") if options["mode"] == "both" else (options["mode"],)
        ks = _ks(options["k"])
        tools = default_tools()
        results = {}
        for dataset in options["datasets"] or list(DATASETS):
            reports = dataset_evaluate(
                dataset=dataset,
                data_dir=Path(settings.DEMO_DATA_DIR),
                modes=modes,
                ks=ks,
                tools=tools,
                params_for=lambda mode: retrieval_params(mode=mode),
                generator=generator() if options["generate"] else None,
                limit=options["limit"],
            )
            results[dataset] = [report.as_dict() for report in reports]
        if options["json"]:
            self.stdout.write(json.dumps(results, indent=2))
            return
        for dataset, rows in results.items():
            header = ["mode", *(f"R@{k}" for k in ks), "EM", "F1", "p50 ms"]
            self.stdout.write(f"{dataset} ({rows[0]['questions']} questions)")
            self.stdout.write("  ".join(f"{h:>8}" for h in header))
            for row in rows:
                cells = [row["mode"], *(f"{row[f'recall@{k}']:.3f}" for k in ks)]
                cells += [
                    "-" if row["exact_match"] is None else f"{row['exact_match']:.3f}",
                    "-" if row["f1"] is None else f"{row['f1']:.3f}",
                ]
                cells.append(f"{row['retrieval_p50_ms']:.1f}")
                self.stdout.write("  ".join(f"{c:>8}" for c in cells))
