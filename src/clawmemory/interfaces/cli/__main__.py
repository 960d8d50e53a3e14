"""``python -m clawmemory.interfaces.cli``: the ``clawmem`` console script."""

import sys

from clawmemory.interfaces.cli import main

if __name__ == "__main__":  # importing this module (pkgutil walks the package) runs nothing
    sys.exit(main())
