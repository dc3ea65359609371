from django.apps import AppConfig


class BackupConfig(AppConfig):
    name = "apps.backup"
    label = "backup"
    verbose_name = "Backup and restore"
