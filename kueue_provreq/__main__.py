"""``python -m kueue_provreq``: the ``kueue-provreq`` command."""

import sys

from kueue_provreq.cli import main

sys.exit(main())
