"""``python -m embodia.cli ...`` is the ``embodia`` command."""

import sys

from embodia.cli import main

sys.exit(main())
