"""Who may audit answers: the auditor role of apps.accounts.roles (kept here for older imports)."""

from __future__ import annotations

from apps.accounts.roles import AUDITOR, audit_required, can_audit

AUDITOR_GROUP = AUDITOR

__all__ = ["AUDITOR_GROUP", "audit_required", "can_audit"]
