"""Every Cypher statement ragkg sends, as named constants and a few builders, one module per consumer.

Statements are always parameterised; labels, relationship types and property names (which cannot be
parameters) are put into the text only by the builders, from allow-lists. Every statement is
re-exported here, so call sites read ``cypher.NAME`` whichever module holds it. Statements only the
benchmarks send live in ``benchmarks/cypher.py``.
"""

from apps.graph.cypher.answers import *  # noqa: F403
from apps.graph.cypher.backup import *  # noqa: F403
from apps.graph.cypher.curation import *  # noqa: F403
from apps.graph.cypher.curation_pages import *  # noqa: F403
from apps.graph.cypher.documents import *  # noqa: F403
from apps.graph.cypher.explorer import *  # noqa: F403
from apps.graph.cypher.ingest import *  # noqa: F403
from apps.graph.cypher.ledger import *  # noqa: F403
from apps.graph.cypher.schema import *  # noqa: F403
from apps.graph.cypher.vectors import *  # noqa: F403
