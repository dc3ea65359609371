"""What the browser tests share: the people who log in, and one browsing session per test
(a fresh browser context) that logs in, takes screenshots and collects the pages' JavaScript errors."""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from PIL import Image
from playwright.sync_api import ConsoleMessage, FloatRect, Page, WebError, expect

BASE_DIR = Path(__file__).resolve().parents[2]
README_SCREENSHOTS = BASE_DIR / "docs" / "screenshots"
README_HEIGHT = 1400  # pixels: the README shows the top of a long page
LOGIN_PAGES = ("/accounts/login/", "/admin/login/")  # the accounts page when it exists, else the admin's

JOURNAL = "The Journal of Moss Studies is published by the Bryological Society of Wales."
SOCIETY = "The Bryological Society of Wales was founded in 1912. Its first president was Gwendolyn Pryce."
# Two names of one museum, which the extractor takes for two organisations: the curator merges them.
MUSEUM = (
    "The National Museum of Wales keeps the herbarium of the society. "
    "In 1925 the National Museum Wales exhibited its mosses."
)
KEPT, DROPPED = "National Museum of Wales", "National Museum Wales"
# A chain of names for the graph explorer to expand: the society's neighbour (its journal) has a
# neighbour of its own (where it is printed) that no sentence names together with the society.
PRINTER = "The Journal of Moss Studies was printed in Aberystwyth."

# Documents of other kinds, for the document viewer: a table, two pictures and a two-page PDF.
TABLE_NAME = "species.csv"
TABLE = "species,site,count\nSphagnum,Tregaron,12\nPolytrichum,Borth,7\nHypnum,Aberystwyth,3\n"
PHOTO_NAME = "moss-photo.png"
# A red picture under a long name: far from "a green picture of moss" (behind "show more"), and a
# name that must wrap rather than widen the page.
CLOTH_NAME = "red-velvet-cloth-from-the-herbarium-store-room-photographed-for-the-survey.png"
CLOTH_COLOUR = (200, 40, 40)
SURVEY_NAME = "survey.pdf"
SURVEY_PAGES = ["Mosses of Borth bog were counted in May", "Mosses of Tregaron bog were counted in June"]


def photo(colour: tuple[int, int, int] = (40, 140, 60)) -> bytes:
    """A small picture of one colour (PNG), green unless told."""
    out = io.BytesIO()
    Image.new("RGB", (120, 90), colour).save(out, format="PNG")
    return out.getvalue()


def field_notes(code: str) -> str:
    """A document only readers of the private collection may see: ``code`` is new in every run."""
    return f"Eluned Morgan found the moss {code} near Tregaron."


@dataclass(frozen=True)
class Corpus:
    """The documents the browser tests ask about, in a collection of their own."""

    collection: str
    texts: dict[str, str]  # document path -> text
    job: str  # the ingestion job's id
    code: str  # a word of this run's field notes, found in no other collection

    @property
    def notes(self) -> str:
        """The path of the field notes (which carries the code too)."""
        return f"notes-{self.code}.txt"


@dataclass(frozen=True)
class Persona:
    username: str
    password: str


def screenshots_dir() -> Path:
    """Where every test run leaves its screenshots (var/test/screenshots: test artifacts, not committed)."""
    return Path(settings.STATE_DIR) / "screenshots"


@dataclass
class Browsing:
    """One test's browser context and page; ``errors`` gathers console errors and uncaught exceptions."""

    page: Page
    errors: list[str] = field(default_factory=list)

    def console(self, message: ConsoleMessage) -> None:
        location = message.location
        # Chromium asks every site for /favicon.ico by itself; ragkg has none, which is no page's error.
        if message.type == "error" and not location.get("url", "").endswith("/favicon.ico"):
            self.errors.append(f"console error: {message.text} ({location.get('url')}:{location.get('lineNumber')})")

    def web_error(self, error: WebError) -> None:
        self.errors.append(f"uncaught: {error.error}")

    def login_page(self) -> str:
        """The login page this server has: /accounts/login/ when it answers, else the admin's."""
        for path in LOGIN_PAGES:
            if self.page.request.get(path, max_redirects=0).status == 200:
                return path
        raise AssertionError(f"no login page answers 200 among {', '.join(LOGIN_PAGES)}")

    def login(self, persona: Persona) -> None:
        """Log in through the login form (Enter in the password box), landing on the home page.
        The admin's login page, the fallback, admits staff users only."""
        self.page.goto(f"{self.login_page()}?next=/")
        self.page.locator("input[name=username]").fill(persona.username)
        password = self.page.locator("input[name=password]")
        password.fill(persona.password)
        password.press("Enter")
        expect(self.page).not_to_have_url(re.compile(r"/login/"))

    def shot(self, name: str, *, readme: str | None = None) -> Path:
        """A full-page screenshot in var/test/screenshots; with ``readme``, also the README's copy
        (its top README_HEIGHT pixels) under docs/screenshots, but only when RAGKG_UPDATE_SCREENSHOTS=1,
        so that plain runs leave the committed files alone."""
        path = screenshots_dir() / f"{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=path, full_page=True)
        if readme and os.environ.get("RAGKG_UPDATE_SCREENSHOTS") == "1":
            README_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            width, height = self.page.evaluate("[document.documentElement.scrollWidth, document.body.scrollHeight]")
            clip: FloatRect = {"x": 0, "y": 0, "width": width, "height": min(height, README_HEIGHT)}
            self.page.screenshot(path=README_SCREENSHOTS / readme, full_page=True, clip=clip)
        return path
