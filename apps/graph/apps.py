from django.apps import AppConfig


class GraphConfig(AppConfig):
    name = "apps.graph"
    label = "graph"
    verbose_name = "Knowledge graph (Neo4j)"
