"""``python -m clawmemory.interfaces.cli``: the ``clawmem`` console script."""

import sys

from clawmemory.interfaces.cli.app import main

sys.exit(main())
