"""Synthetic session histories for ``acode_generate_data``: plausible and valid.

``vocabulary`` holds what the stories draw from (words, and the registry's roles, rules
and tools), ``story`` one session's life as rows (``SessionStory``), ``jobs`` a job's
events.
"""

from __future__ import annotations

from sessions_app.management.synthetic.story import SessionStory
from sessions_app.management.synthetic.vocabulary import Vocabulary, split

__all__ = ["SessionStory", "Vocabulary", "split"]
