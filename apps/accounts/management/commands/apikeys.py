from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts import apikeys
from apps.core.commands import ProjectCommand


class Command(ProjectCommand):
    help = "API keys: create one for a user (printed once, as the last line), list them, revoke one."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="make a key for USERNAME; the key is the last line printed")
        create.add_argument("username")
        create.add_argument("--name", default="", help="a label to tell keys apart")
        create.add_argument("--expires", type=int, metavar="DAYS", help="expire after DAYS days (default: never)")
        listing = actions.add_parser("list", help="every key, or USERNAME's (ids, labels, states; never the keys)")
        listing.add_argument("username", nargs="?")
        revoke = actions.add_parser("revoke", help="revoke the key with id KEY_ID (from `list`)")
        revoke.add_argument("key_id")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["action"] == "create":
                user = apikeys.user_by_name(options["username"])
                made = apikeys.key_create(user=user, name=options["name"], expires_days=options["expires"])
                expires = made.key.expires_at.isoformat(timespec="seconds") if made.key.expires_at else "never"
                self.stdout.write(f"key {made.key.key_id} for {options['username']} (expires: {expires});")
                self.stdout.write("it is shown only now, keep it secret:")
                self.stdout.write(made.secret)
            elif options["action"] == "list":
                owner = apikeys.user_by_name(options["username"]) if options["username"] else None
                for key in apikeys.keys_of(owner):
                    used = key.last_used_at.isoformat(timespec="seconds") if key.last_used_at else "never"
                    self.stdout.write(
                        f"{key.key_id}  {key.user.get_username():<20} {apikeys.key_state(key):<8} "
                        f"created {key.created_at.isoformat(timespec='seconds')}  last used {used}  {key.name}"
                    )
            else:
                key = apikeys.key_revoke(key_id=options["key_id"])
                self.stdout.write(f"revoked {key.key_id} ({key.user.get_username()})")
        except apikeys.ApiKeyError as exc:
            raise CommandError(str(exc)) from exc
