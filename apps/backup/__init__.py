"""Backup and restore of everything ragkg keeps: database, graph, vector indexes, chain state (docs/backup.md)."""
