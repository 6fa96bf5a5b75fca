"""acode settings: a base module plus topic modules, all driven by environment variables."""

from __future__ import annotations

from acode.settings.base import *  # noqa: F403
from acode.settings.celery import *  # noqa: F403
from acode.settings.database import *  # noqa: F403
from acode.settings.llm import *  # noqa: F403
from acode.settings.observability import *  # noqa: F403
from acode.settings.redis import *  # noqa: F403
from acode.settings.security import *  # noqa: F403
