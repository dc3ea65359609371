from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.models import Collection, CollectionGrant
from apps.accounts.roles import ROLES
from apps.accounts.services import (
    AccountsError,
    collection_grant,
    collection_visibility_set,
    group_member_set,
    role_set,
)
from apps.core.commands import ProjectCommand

EXAMPLES = """
  grant --user ana --collection research       ana may read "research"
  grant --group team --collection research     members of group "team" may read it
  grant --group team --user ana                ana joins group "team"
  grant --role curator --user ana              ana becomes a curator
  grant --public demo | --private research     everyone / only owner, grantees and admins
  grant --list                                 every collection with its owner and grants
  add --revoke to take a grant, membership or role back
"""


class Command(ProjectCommand):
    help = "Who may read which collection, and who holds which role (no options: examples; docs/access.md)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", help="a username")
        parser.add_argument("--group", help="a group name (created when missing)")
        parser.add_argument("--collection", help="the collection to grant read access to")
        parser.add_argument("--role", choices=ROLES, help="a role to give --user")
        parser.add_argument("--public", metavar="COLLECTION", help="make a collection readable by everyone")
        parser.add_argument("--private", metavar="COLLECTION", help="make a collection readable only by its readers")
        parser.add_argument("--revoke", action="store_true", help="take back instead of giving")
        parser.add_argument("--list", action="store_true", help="list the collections and who may read them")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            done = self.run(options)
        except AccountsError as exc:
            raise CommandError(str(exc)) from exc
        for line in done:
            self.stdout.write(line)

    def run(self, options: dict[str, Any]) -> list[str]:
        user, group, collection, role = (options[key] for key in ("user", "group", "collection", "role"))
        if options["list"]:
            return collections_listed()
        if options["public"] or options["private"]:
            if options["public"] and options["private"]:
                raise AccountsError("Give --public or --private, not both.")
            name = options["public"] or options["private"]
            shown = collection_visibility_set(name=name, public=bool(options["public"]))
            return [f"{shown.name} is {'public' if shown.public else 'private'}"]
        member = not options["revoke"]
        if role:
            if not user:
                raise AccountsError("--role needs --user.")
            return [role_set(username=user, role=role, member=member)]
        if collection:
            if bool(user) == bool(group):
                raise AccountsError("--collection needs --user or --group (one of them).")
            return [collection_grant(collection=collection, username=user, group=group, revoke=options["revoke"])]
        if user and group:
            return [group_member_set(username=user, group=group, member=member)]
        raise AccountsError("Nothing to do." + EXAMPLES)


def reader(grant: CollectionGrant) -> str:
    if grant.user is not None:
        return f"user {grant.user.get_username()}"
    return f"group {grant.group.name}" if grant.group is not None else "nobody"


def collections_listed() -> list[str]:
    lines = []
    for collection in Collection.objects.select_related("owner").prefetch_related("grants__user", "grants__group"):
        readers = sorted(reader(grant) for grant in collection.grants.all())
        owner = collection.owner.get_username() if collection.owner else "—"
        access = "public" if collection.public else "private"
        lines.append(f"{collection.name}  {access}  owner {owner}  readers: {', '.join(readers) or '—'}")
    return lines or ["no collections yet"]
