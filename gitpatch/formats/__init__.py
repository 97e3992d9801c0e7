"""Parsers: one module per edit language, each turning text (or JSON) into a ``Proposal``.

Parsers never read files and never decide whether an edit applies; that is the engine's job.
"""

from __future__ import annotations

from gitpatch.formats import apply_patch, patch_resource, search_replace, unified_diff

__all__ = ["apply_patch", "patch_resource", "search_replace", "unified_diff"]
