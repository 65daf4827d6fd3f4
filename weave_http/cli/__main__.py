"""``python -m weave_http.cli``: the same as the ``weave`` console script."""

import sys

from weave_http.cli import main

sys.exit(main())
