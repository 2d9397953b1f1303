"""``python -m amber``: the ``amber`` command line (see ``docs/cli.md``)."""

import sys

from ._cli import main

sys.exit(main())
