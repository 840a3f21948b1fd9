"""Run the heuresis command as ``python -m heuresis_env.cli``."""

import sys

from heuresis_env.cli import main

sys.exit(main())
