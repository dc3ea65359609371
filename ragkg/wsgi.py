"""WSGI entry point (gunicorn ragkg.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")

application = get_wsgi_application()

# The answering models load now, in the background, not on the first question (RAGKG_WARM_UP=0: off).
from apps.answers.warm import warm_in_background, warm_retrieval  # noqa: E402 - needs the application

warm_in_background("retrieval", warm_retrieval)
