"""ragkg: a knowledge-graph, multimodal RAG web application."""

from ragkg.celery import app as celery_app

__all__ = ["celery_app"]
