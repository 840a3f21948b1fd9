"""The default budgets of an episode: the one place they are set.

Every comparison imposes the same budgets on every policy (``EpisodeSettings``); the
environment, the runner, the demo and the examples start from these defaults.
"""

#: steps per episode: tool calls + edits + rejected actions
DEFAULT_MAX_STEPS = 50
#: wall-clock seconds per episode, from reset
DEFAULT_MAX_SECONDS = 600.0
#: tokens a language-model policy may generate per turn
DEFAULT_TOKEN_BUDGET_PER_TURN = 4096
#: rows of experiments per episode in the interventional condition (the ``-int`` ids): a
#: budget apart from the step budget (``docs/experiments.md``)
DEFAULT_EXPERIMENT_ROWS = 500
#: rows one experiment draws unless it asks for another number
DEFAULT_ROWS_PER_EXPERIMENT = 100
