import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.core.commands import ProjectCommand
from apps.ledger.anchoring import anchors_advance, contract_deploy, contract_ensure
from apps.ledger.chain import ChainError, chain_from_settings
from apps.ledger.models import Anchor
from apps.ledger.proofs import proof_bundle
from apps.ledger.services import LedgerError, tree_head
from apps.ledger.verify import log_verify


class Command(ProjectCommand):
    help = "The knowledge change log: anchor it on the chain, verify it, write proofs (docs/ledger.md)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        deploy = sub.add_parser("deploy", help="deploy the anchor contract (again, with --new)")
        deploy.add_argument("--new", action="store_true", help="deploy a new contract even if one is there")
        sub.add_parser("anchor", help="one anchoring round now: send the current tree head, follow earlier ones")
        verify = sub.add_parser("verify", help="recompute the tree, check every anchor on chain (and the graph)")
        verify.add_argument("--json", action="store_true")
        verify.add_argument("--graph", action="store_true", help="also check that the graph holds what the log says")
        verify.add_argument("--offline", action="store_true", help="do not check the anchors on chain")
        proof = sub.add_parser("proof", help="write the proof bundle of one entry")
        proof.add_argument("entry", type=int, help="the entry's sequence number")
        proof.add_argument("--out", help="file to write (default: standard output)")
        sub.add_parser("apply", help="apply the graph changes still pending behind their entries")
        sub.add_parser(
            "adopt", help="log the documents in the graph that no entry accounts for (ingested before the log)"
        )
        sub.add_parser("retree", help="store the subtrees that tree heads and proofs read again, from the entries")
        status = sub.add_parser("status", help="tree head and anchors")
        status.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            getattr(self, f"_{options['action']}")(options)
        except (ChainError, LedgerError) as exc:
            raise CommandError(str(exc)) from exc

    def _deploy(self, options: dict[str, Any]) -> None:
        chain = chain_from_settings()
        chain.check()
        address = contract_deploy(chain) if options["new"] else contract_ensure(chain)
        self.stdout.write(f"anchor contract: {address}")

    def _anchor(self, options: dict[str, Any]) -> None:
        report = anchors_advance()
        self.stdout.write(json.dumps(asdict(report)))

    def _verify(self, options: dict[str, Any]) -> None:
        driver = None
        if options["graph"]:
            from apps.graph.driver import get_driver

            driver = get_driver()
        chain = None if options["offline"] else chain_from_settings(read_only=True)
        report = log_verify(chain=chain, driver=driver)
        if options["json"]:
            self.stdout.write(json.dumps(report.as_json(), indent=2))
        else:
            self.stdout.write(
                f"{report.entries} entries, root {report.root}, {report.anchors_checked} anchors checked"
                + (f", {report.graph_checked} graph subjects checked" if options["graph"] else "")
            )
            for problem in report.problems:
                self.stdout.write(f"PROBLEM [{problem.kind}] {problem.message}")
            self.stdout.write(
                "ok" if report.ok else f"{len(report.problems)} problem(s); first: {report.problems[0].message}"
            )
        if not report.ok:
            raise SystemExit(1)

    def _proof(self, options: dict[str, Any]) -> None:
        text = json.dumps(proof_bundle(options["entry"]), indent=2)
        if options["out"]:
            Path(options["out"]).write_text(text + "\n")
            self.stdout.write(f"proof of entry #{options['entry']} written to {options['out']}")
        else:
            self.stdout.write(text)

    def _apply(self, options: dict[str, Any]) -> None:
        from apps.graph.driver import get_driver
        from apps.ledger.graph import graph_changes_apply

        applied, pending = graph_changes_apply(driver=get_driver())
        self.stdout.write(f"{applied} graph change(s) applied, {pending} pending")
        if pending:
            raise SystemExit(1)

    def _adopt(self, options: dict[str, Any]) -> None:
        from apps.graph.driver import get_driver
        from apps.ledger.adopt import documents_adopt

        adopted = documents_adopt(driver=get_driver())
        self.stdout.write(f"{len(adopted)} document(s) brought under the change log")

    def _retree(self, options: dict[str, Any]) -> None:
        from apps.ledger.subtrees import nodes_rebuild

        self.stdout.write(f"{nodes_rebuild()} subtree hash(es) stored")

    def _status(self, options: dict[str, Any]) -> None:
        head = tree_head()
        anchors = [
            {
                "tree_size": a.tree_size,
                "root": a.root,
                "state": a.state,
                "tx_hash": a.tx_hash,
                "block_number": a.block_number,
                "confirmations": a.confirmations,
                "error": a.error,
            }
            for a in Anchor.objects.order_by("-tree_size", "-created_at")[:20]
        ]
        if options["json"]:
            self.stdout.write(json.dumps({"tree_size": head.size, "root": head.root, "anchors": anchors}, indent=2))
            return
        self.stdout.write(f"tree size {head.size}, root {head.root}")
        for anchor in anchors:
            self.stdout.write(
                f"  size {anchor['tree_size']}: {anchor['state']} {anchor['tx_hash']} "
                f"(block {anchor['block_number']}, {anchor['confirmations']} confirmations) {anchor['error']}"
            )
