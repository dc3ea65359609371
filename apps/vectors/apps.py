from django.apps import AppConfig


class VectorsConfig(AppConfig):
    name = "apps.vectors"
    label = "vectors"
    verbose_name = "Vector indexes (FAISS)"
