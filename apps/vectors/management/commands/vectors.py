import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.core.commands import ProjectCommand
from apps.graph.driver import get_driver
from apps.vectors import embedding
from apps.vectors.config import spaces_in_use
from apps.vectors.errors import VectorIndexError
from apps.vectors.maintenance import CheckReport, collection_respace, vectors_check, vectors_rebuild
from apps.vectors.services import vectors_info
from apps.vectors.store import store_head, store_prune
from apps.vectors.types import SPACES, TEXT_SPACES, EmbedFn


def _embedder(space: str) -> EmbedFn:
    try:
        return embedding.default_clip_embed() if space == "clip" else embedding.default_text_embed(space)
    except VectorIndexError as exc:
        raise CommandError(str(exc)) from exc


class Command(ProjectCommand):
    help = "Inspect the vectors (the shared store, this host's copy), check them against the graph, repair, rebuild."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        rebuild = actions.add_parser(
            "rebuild", help="re-embed every node of a space from Neo4j into the store, in place of what it holds"
        )
        rebuild.add_argument("--space", choices=SPACES, default="text")
        check = actions.add_parser(
            "check", help="compare the store with the graph, and this host's copy with the store"
        )
        check.add_argument("--space", choices=SPACES, default="text")
        check.add_argument("--collection", action="append", dest="collections", help="only this collection (repeat)")
        check.add_argument(
            "--repair",
            action="store_true",
            help="add the missing vectors, remove the extra ones, rebuild a copy that differs",
        )
        check.add_argument("--json", action="store_true", help="print the report as JSON")
        prune = actions.add_parser(
            "prune", help="drop the tombstones of removed vectors, but those of the last --keep changes"
        )
        prune.add_argument("--space", choices=SPACES, default="text")
        prune.add_argument(
            "--keep", type=int, default=10000, help="changes whose tombstones stay (a copy further behind rebuilds)"
        )
        respace = actions.add_parser(
            "respace", help="move a collection's texts to another text space (re-embeds that collection only)"
        )
        respace.add_argument("--collection", required=True)
        respace.add_argument(
            "--space", choices=TEXT_SPACES, required=True, help="text (English) or mtext (any language)"
        )
        info = actions.add_parser("info", help="what this host's copy and the store hold")
        info.add_argument("--space", choices=SPACES, action="append", dest="spaces")
        info.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            getattr(self, f"_{options['action']}")(options)
        except VectorIndexError as exc:
            raise CommandError(f"{type(exc).__name__}: {exc}") from exc

    def _rebuild(self, options: dict[str, Any]) -> None:
        space = options["space"]
        report = vectors_rebuild(driver=get_driver(), space=space, embed=_embedder(space))
        self.stdout.write(
            self.style.SUCCESS(
                f"rebuilt {space} vectors: {report.count} ({report.index_type}) in {report.seconds}s {report.labels}"
            )
        )

    def _respace(self, options: dict[str, Any]) -> None:
        space = options["space"]
        report = collection_respace(
            driver=get_driver(), collection=options["collection"], space=space, embed=_embedder(space)
        )
        self.stdout.write(
            self.style.SUCCESS(
                f"collection {report.collection}: {report.before} -> {report.after}, "
                f"{report.moved} vectors in {report.seconds}s"
            )
        )

    def _check(self, options: dict[str, Any]) -> None:
        space, repair = options["space"], options["repair"]
        collections = set(options["collections"]) if options["collections"] else None
        embed = _embedder(space) if repair else None
        report = vectors_check(driver=get_driver(), space=space, collections=collections, repair=repair, embed=embed)
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict(), indent=2))
        else:
            self._write_check(report)
        if not report.ok and not repair:
            raise CommandError(f"the {space} index and the graph differ (run with --repair)", returncode=1)

    def _write_check(self, report: CheckReport) -> None:
        self.stdout.write(
            f"{report.space}: {report.graph} nodes in the graph, {report.stored} vectors stored; "
            f"{len(report.missing)} missing, {len(report.extra)} extra, {len(report.collisions)} id collisions; "
            f"this host's copy: {report.host} vectors, {len(report.host_missing)} missing, "
            f"{len(report.host_extra)} extra{' (rebuilt from the store)' if report.reloaded else ''}"
        )
        if report.added or report.removed:
            self.stdout.write(f"repaired: {report.added} added, {report.removed} removed")
        style = self.style.SUCCESS if report.ok else self.style.WARNING
        self.stdout.write(style("in step with the graph" if report.ok else "out of step with the graph or the store"))

    def _prune(self, options: dict[str, Any]) -> None:
        if options["keep"] < 0:
            raise CommandError("--keep is a number of changes, 0 or more")
        space = options["space"]
        below = store_head(space).seq - options["keep"]
        dropped = store_prune(space, below=below) if below > 0 else 0
        self.stdout.write(f"{space}: {dropped} tombstones dropped (changes up to {max(below, 0)})")

    def _info(self, options: dict[str, Any]) -> None:
        infos = [vectors_info(space=space) for space in options["spaces"] or spaces_in_use()]
        if options["json"]:
            self.stdout.write(json.dumps(infos, indent=2))
            return
        for info in infos:
            self.stdout.write(
                f"{info['space']}: {info['count']} vectors, {info['index_type']}"
                f"{' (trained)' if info['trained'] else ''}, {info['dimension']}-d {info['model']}, "
                f"{info['tombstones']} tombstones, gpu={info['gpu']}; at change {info['copy_seq']} of "
                f"{info['feed']['seq']} ({info['feed']['stored']} stored); local snapshot: {info['saved']}; "
                f"{info.get('collections', {})}"
            )
