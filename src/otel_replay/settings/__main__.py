"""``python -m otel_replay.settings --markdown``: print the settings page's table of variables."""

from __future__ import annotations

import sys

from .readme import main

sys.exit(main())
