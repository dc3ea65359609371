"""A helper process for ``apps.ingest.extraction_pool``: texts in on stdin, extractions out on stdout.

Runs without Django. Each request is a pickled list of texts; each answer is the
list of ``Extraction`` for them, or the exception that stopped the extraction.
The process ends when stdin closes.
"""

from __future__ import annotations

import argparse
import os
import sys

from apps.ingest.extraction import DEFAULT_MODEL, SpacyExtractor
from apps.ingest.extraction_pool import receive_message, send_message


def serve(extractor: SpacyExtractor) -> None:
    requests = sys.stdin.buffer
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not corrupt the answers
    while True:
        try:
            texts = receive_message(requests)
        except EOFError:
            return
        try:
            if not isinstance(texts, list):
                raise TypeError("expected a list of texts")
            answer: object = extractor.extract(texts)
        except Exception as exc:  # reported to the parent, which fails the batch with it
            answer = RuntimeError(f"{type(exc).__name__}: {exc}")
        send_message(answers, answer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    args = parser.parse_args()
    serve(SpacyExtractor(model=args.model))


if __name__ == "__main__":
    main()
