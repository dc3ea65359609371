"""``manage.py mcp --user USERNAME``: the MCP server over stdio, acting as USERNAME (docs/mcp.md).

An MCP client starts this as a subprocess and speaks JSON-RPC on its stdin and stdout. Standard output
is the protocol channel: logs go to stderr (ragkg's logging writes there), and while the server runs the
SDK points file descriptor 1 at stderr, so stray output from libraries cannot corrupt the stream.
"""

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError, CommandParser

from apps.api.mcp_server import stdio_serve
from apps.core.commands import ProjectCommand


class Command(ProjectCommand):
    help = "Serve the MCP tools (search, ask, get_source, get_proof) on stdin/stdout, as USERNAME."
    requires_system_checks: list[str] = []  # nothing may reach stdout before the protocol starts

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, metavar="USERNAME", help="the user the tools act as")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["user"]).first()
        if user is None or not user.is_active:
            raise CommandError(f"no active user {options['user']!r}")
        stdio_serve(user=user)
