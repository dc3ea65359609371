#!/usr/bin/env python
"""Django's command-line utility for ragkg."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")
    from django.core.management import execute_from_command_line

    from ragkg.env import EnvError

    try:
        execute_from_command_line(sys.argv)
    except EnvError as exc:
        sys.exit(f"configuration error: {exc}")


if __name__ == "__main__":
    main()
