"""JavaScript value semantics for JSON-shaped values: shared with the internal model.

The helpers live in :mod:`ahp.state._js` (one home for every dialect); this module keeps the
names the 0.2.0 reducers import.
"""

from __future__ import annotations

from ahp.state._js import as_dict, as_list, assign, clean, concat, js_text, payload, truthy, without_none

__all__ = ["as_dict", "as_list", "assign", "clean", "concat", "js_text", "payload", "truthy", "without_none"]
