from django.apps import AppConfig


class AnswersConfig(AppConfig):
    name = "apps.answers"
    label = "answers"
    verbose_name = "Answers"
