import json
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser

from apps.core.commands import ProjectCommand
from apps.models.registry import ROLES, profile_specs
from apps.models.reports import ModelReport, spec_report


class Command(ProjectCommand):
    help = "List the model of each role (name, where it loads from); with --load, load each one and time it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--profile", choices=("offline", "hub"), help="default: RAGKG_MODEL_PROFILE")
        parser.add_argument("--load", action="store_true", help="load each model and report ok/failed with seconds")
        parser.add_argument("--role", choices=ROLES, action="append", help="only this role (repeatable)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument(
            "--probe",
            action="store_true",
            help="time the generator candidates on this machine for RAGKG_GENERATOR=auto (once; cached) and show why",
        )
        parser.add_argument("--force", action="store_true", help="with --probe: measure again")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["probe"]:
            self._probe(force=options["force"], as_json=options["json"])
            return
        specs = profile_specs(options["profile"])
        roles = options["role"] or list(ROLES)
        reports = [
            spec_report(role, spec, load=options["load"], hub_offline=settings.HUB_OFFLINE)
            for role, spec in specs.by_role().items()
            if role in roles
        ]
        if options["json"]:
            self.stdout.write(
                json.dumps({"profile": specs.profile, "models": [r.as_dict() for r in reports]}, indent=2)
            )
        else:
            self.stdout.write(f"profile: {specs.profile}")
            for report in reports:
                self._write(report)
        failed = [report.role for report in reports if report.status == "failed"]
        if failed:
            raise CommandError(f"failed to load: {', '.join(failed)}")

    def _probe(self, *, force: bool, as_json: bool) -> None:
        from apps.models.auto import auto_probe

        result = auto_probe(force=force)
        if as_json:
            self.stdout.write(json.dumps(result.as_dict(), indent=2))
            return
        rates = ", ".join(f"{name} {rate:g}" for name, rate in result.rates_gflops.items())
        self.stdout.write(f"machine: {result.machine.get('cpu')}, {result.machine.get('cores')} cores; {rates} GFLOP/s")
        for timing in result.timings:
            if timing.measured:
                figures = (
                    f"prefill {timing.prefill_s:.2f} s, {timing.token_s * 1000:.0f} ms/token, "
                    f"expected {timing.expected_s:.2f} s (loaded in {timing.load_s:.1f} s)"
                )
            else:
                figures = timing.note
            self.stdout.write(f"  {timing.key:<14} {timing.precision:<9} {figures}")
        self.stdout.write(f"auto: {result.key} ({result.precision}): {result.reason}")

    def _write(self, report: ModelReport) -> None:
        if report.status == "off":
            self.stdout.write(f"{report.role:<14} off ({report.detail})")
            return
        self.stdout.write(f"{report.role:<14} {report.name}")
        self.stdout.write(f"{'':<14} from {report.source}: {report.location}")
        for key, value in report.options.items():
            self.stdout.write(f"{'':<14} {key}: {value}")
        if report.status == "ok":
            self.stdout.write(f"{'':<14} " + self.style.SUCCESS(f"ok ({report.seconds:.1f}s)") + f" {report.detail}")
        elif report.status == "failed":
            self.stdout.write(f"{'':<14} " + self.style.ERROR("failed") + f" {report.detail}")
        elif report.status != "listed":
            self.stdout.write(f"{'':<14} {report.detail}")
