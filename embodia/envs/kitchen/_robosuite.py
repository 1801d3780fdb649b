"""Import robosuite once, without its import-time chatter.

robosuite logs warnings when it is imported (no private macro file, optional packages missing) and an
INFO line every time a controller is (re)loaded, i.e. on every kitchen reset. Importing this module
first silences the import-time messages and keeps robosuite's warnings and errors.
"""

from __future__ import annotations

import logging

_logger = logging.getLogger("robosuite_logs")
_logger.disabled = True
try:
    import robosuite  # noqa: F401
finally:
    _logger.disabled = False
    _logger.setLevel(logging.WARNING)
