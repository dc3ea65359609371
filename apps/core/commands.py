"""The base of the project's management commands."""

from __future__ import annotations

from django.core.management.base import BaseCommand


class ProjectCommand(BaseCommand):
    """A management command that starts without Django's system checks.

    The checks resolve every URL, which imports every view and with them torch, spaCy and the MCP
    server: about 8 s of each command's start on two cores, for checks that find nothing a command
    needs. They run in ``manage.py check`` (tests/unit/test_security.py runs it with ``--deploy``).
    """

    requires_system_checks: list[str] = []
