"""The Heuresis Gymnasium environment: recover a hidden causal graph from an anonymous table.

Importing this module loads Gymnasium and NumPy only; instances, evidence and tools load
when an environment is built or reset.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import EnvSpec

from heuresis_env.env.arguments import check_reset_options
from heuresis_env.env.config import KEYWORDS, EpisodeConfig
from heuresis_env.env.episode_end import (
    TERMINATION_REASONS,
    end_reason,
    final_scores,
    time_limit_around,
)
from heuresis_env.env.episode_start import instance_index, open_episode_instance, starting_state
from heuresis_env.env.referee import PublicInstance
from heuresis_env.env.render import draw_episode, render_text
from heuresis_env.env.rl_view import RLInterface, RLOutcome
from heuresis_env.env.statement import graph_task_statement, question_budget, tool_lines
from heuresis_env.env.tasks import QuestionTask
from heuresis_env.env.text_view import (
    observation_text,
    run_text_action,
    text_observation,
    text_view_spaces,
)
from heuresis_env.env.toolbox import available_tools, tool_schemas
from heuresis_env.env.toolbox.code_tool import close_sandbox
from heuresis_env.env.toolbox.registry import ParsedAction, describe_exception
from heuresis_env.env.toolbox.state import EpisodeState
from heuresis_env.env.traces import TraceRecorder, episode_header, text_digest, trace_file_name
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.generation.instances import InstanceKey
from heuresis_env.generation.salts import SEALED_SALT_PREFIX, SealedSalt, salt_marker
from heuresis_env.graphs import Graph

# ---- the environment ----------------------------------------------------------------------------

#: what ``step`` returns: observation, reward, terminated, truncated, info
StepResult = tuple[dict[str, Any], float, bool, bool, dict[str, Any]]


class HeuresisEnv(gym.Env):
    """
    ## Description

    Heuresis asks an agent to recover the causal graph behind an anonymous data table. Each
    instance is the data matrix X (n rows × d columns, named X1..Xd) sampled from a hidden
    structural causal model (SCM) of one *mechanism family* (`lg`, `anm`, `hetero`, `wild`,
    `mixed`, `gauntlet`), or of a known structure (`bnlearn-*`), or a real data table;
    columns are standardized and randomly permuted, so names and order carry no information. The agent edits a **working graph** one action at a time — a tool
    call that reads evidence (CI tests, reference algorithms, stability, orientation probes,
    sandboxed code, effect estimates, graph queries) or an edge edit — until it submits.
    The main score is the adjacency F1 of the submitted graph against the true DAG.

    In the **guided** condition the working graph starts as PC-KCI's output and the tool
    `deletion_log` shows why PC removed every missing edge. Each registered id is one family:
    `Heuresis-lg-v0`, …, `Heuresis-gauntlet-v0`.

    **Question episodes** (`task="qa"`, ids `Heuresis-qa-{family}-v0`) ask one causal question
    about the table instead — independence, direct cause, collider, confounding, a whole or
    partial graph, an average effect — drawn from the split's fixed question set, answered
    with the `answer` tool and scored against the exact truth of the hidden model (1 for a
    correct answer); see `docs/questions.md`. `name_mode="decoy"` names the columns with
    random domain words.

    ## Action Space

    *Text view* (`interface="text"`, the default): a JSON string, or the same Python dict,
    `{"tool": NAME, "args": {...}}` — see `docs/toolbox.md` or `heuresis tools` for every
    tool and `env.unwrapped.tool_schemas()` for function-calling schemas. Edge edits
    (`add_edge`, `remove_edge`, `orient_edge`, `reverse_edge`, `set_graph`, `load_graph`)
    and `submit` are tools too. The space is `Text(max_length=16384)`.

    A malformed action (bad JSON, unknown tool — the error lists the tools —, bad or unknown
    arguments, unknown variable, self-loop, duplicate edge, a directed cycle under
    `target="dag"` or `"cpdag"`, `deletion_log` in an unguided episode, an action over 16,384
    characters) never raises: it yields an error observation, costs a step and leaves the
    working graph unchanged.

    *RL view* (`interface="rl"`): `Discrete(K)` over (pair × {add, remove, orient, test}) +
    submit, derived from the same tool registry; `env.unwrapped.action_masks()` gives the
    valid actions for sb3-contrib's `MaskablePPO` (see `heuresis_env.env.rl_view`).

    ## Observation Space

    Text view, a `Dict`:

    | Key             | Space                                   | Meaning                                        |
    |-----------------|-----------------------------------------|------------------------------------------------|
    | `text`          | `Text(max_length=20000)`                | the tool output (the task statement at reset)  |
    | `working_graph` | `Box(0, 3, (d, d), int8)`               | edge marks: `[i, j]` is the mark at j's end (0 none, 1 tail, 2 arrow, 3 circle) |
    | `budget_left`   | `Box(0, max_steps, (1,), float32)`      | steps left                                     |
    | `last_error`    | `Text(max_length=20000)`                | the last action's error, `""` when it ran      |

    RL view, a flat `Dict` of 1-D `MultiBinary`/`Box`: `adjacency` (d·d; `[i·d + j]` = 1 for
    i → j or i — j), `evidence` (pairs × 7 features in [−1, 1]: PC-Fisher-z deletion
    p-value, |Pearson r|, distance correlation, dCor − |r|, KCI p-value at the deleting set
    once tested, bootstrap stability, PC-KCI deletion p-value when guided),
    `evidence_available` (which features exist), `budget_left` (fraction of steps), and
    `repair` / `repair_available` (pairs × R: the repair table of PC-KCI's output, guided
    only; observation layout 2, `heuresis_env.env.rl_view.RL_OBSERVATION_LAYOUT`). With
    `rl_evidence="lazy"` (the default unguided) a reset computes only the cheap columns
    (Fisher-z deletion p-value, |Pearson r|, PC-KCI's deletion p-value when guided); a pair's
    distance correlation, gap, stability and KCI p-value, and its repair row, become
    available when the pair is tested (the same numbers the eager view shows at reset).

    ## Rewards

    `reward="f1"` (default): 0 on every step, and the adjacency F1 of the final graph on the
    last step (submitted or truncated). `reward="shaped"`: the change in adjacency F1 caused
    by each edit (its sum over an episode is final F1 − starting F1), for training.

    ## Starting State

    `reset(seed=..., options={"index": i})` loads instance i of the split; without an index
    the environment's seeded generator draws one (from `indices` when given). The working
    graph starts empty, or as PC-KCI's CPDAG when `guided=True`. The first observation's
    text is the task statement with the list of tools.

    ## Episode End

    1. Termination: the agent calls `submit`.
    2. Truncation: the step budget (`max_steps`, every action counts) or the wall-time budget
       (`max_seconds` since reset) runs out; the working graph is scored as submitted.

    A harness may end an episode early with `env.unwrapped.end_episode("aborted")`, which
    scores the working graph the same way.

    The final `info` holds `termination_reason` ("submitted", "step_budget", "wall_time"),
    `scores` (f1, precision, recall, shd, nshd, shd_cpdag, n_edges) and `submitted`. No
    earlier observation or info reveals the hidden record, and no attribute of the
    environment holds it: the true graphs live in closures that report scores only after the
    episode (introspection of closures or of the garbage collector is out of scope).

    ## Arguments

    ```python
    >>> import gymnasium as gym, heuresis_env
    >>> env = gym.make("Heuresis-wild-v0", guided=False, d=10, n=600)
    >>> observation, info = env.reset(seed=0)
    >>> observation, reward, terminated, truncated, info = env.step(
    ...     '{"tool": "ci_test", "args": {"x": "X1", "y": "X2", "method": "kci"}}')
    ```

    | Parameter      | Type          | Default  | Description                                          |
    |----------------|---------------|----------|------------------------------------------------------|
    | `config`       | **EpisodeConfig** | `None` | the whole configuration, instead of the keywords below (`heuresis_env.env.EpisodeConfig`; `EpisodeConfig.from_keywords(**keywords)` builds one) |
    | `family`       | **str**       | (id)     | mechanism family                                     |
    | `split`        | **str**       | `"dev"`  | `"dev"` (100 instances) or `"test"` (32)             |
    | `guided`       | **bool**      | `False`  | start from PC-KCI's output; `deletion_log` offered   |
    | `max_steps`    | **int**       | `50`     | step budget (tool calls + edits + rejected actions)  |
    | `max_seconds`  | **float**     | `600`    | wall-time budget per episode; `None` for none        |
    | `target`       | **str**       | `"none"` | stated target: `"none"`, `"cpdag"` or `"dag"`        |
    | `toolbox`      | **str**       | `"full"` | `"minimal"` lacks run_code, stability, orientation_probe; `"code"` has only run_code and submit/answer |
    | `reward`       | **str**       | `"f1"`   | `"f1"` at the end, or `"shaped"` (ΔF1 per edit)      |
    | `d`, `n`       | **int**       | 10, 600  | variables and rows (a structure's d, a table's own)  |
    | `graph_model`  | **str**       | `"er"`   | `"er"` or `"ba"` (`fixed` structure, `data` table)  |
    | `interface`    | **str**       | `"text"` | `"text"` or `"rl"`                                   |
    | `indices`      | **list[int]** | `None`   | instance indices `reset` draws from (default: all)   |
    | `render_mode`  | **str**       | `None`   | `"ansi"`, `"rgb_array"`, or `"human"` (prints each step) |
    | `trace_path`   | **str**       | `None`   | directory for one JSON-lines trace per episode       |
    | `trace_scores` | **bool**      | `True`   | False: a trace's end record holds no scores (`heuresis score` computes them) |
    | `salt`         | **str**       | `None`   | secret salt of a sealed test split                   |
    | `rl_text`      | **bool**      | `False`  | RL view: format each action's text (as traces do)    |
    | `rl_evidence`  | **str**       | `"auto"` | RL view: `"lazy"` (cheap columns at reset, a pair's others when tested), `"eager"` (the whole table at reset); auto: eager guided, lazy unguided |
    | `task`         | **str**       | `"graph"`| `"graph"`, or `"qa"`: one question per episode       |
    | `name_mode`    | **str**       | `"anonymous"` | question episodes: `"anonymous"` or `"decoy"` names |
    | `questions`    | **list[int]** | `None`   | question ids `reset` draws from (default: all)       |
    | `data`         | **array**     | `None`   | `Heuresis-dataset-v0`: the table (n × d numbers)     |
    | `names`, `graph` |             | `None`   | its column names; its graph (edge list) or None      |
    | `anonymize`    | **bool**      | `False`  | rename the table's columns X1..Xd in random order    |
    | `standardize`  | **bool**      | `True`   | scale the table's columns to mean 0, variance 1      |
    | `dataset_name` | **str**       | `"dataset"` | the name the table is registered under            |

    ## Data tables

    `Heuresis-sachs-v0` plays the Sachs et al. (2005) data (853 cells × 11 proteins,
    anonymized, scored against the 17-arc consensus graph); `Heuresis-dataset-v0` with
    `data=...` plays a user's table; `Heuresis-bnlearn-alarm-v0` and the other BNLearn ids are
    simulated families on fixed structures (see `docs/families.md`). A table has one
    instance (index 0, the same in both splits). Without a graph the episode runs as usual
    and ends with the submitted graph and `scores` of None (`info["ground_truth"]` is False);
    `reward="shaped"` needs a graph.

    ## Vectorized environment

    ```python
    >>> envs = gym.make_vec("Heuresis-lg-v0", num_envs=4, vectorization_mode="async",
    ...                     interface="rl", d=5, n=200)
    ```

    ## Version History

    * v0: initial release (generator version 1, evidence version 1); the RL view's
      observation layout 2 adds the repair table (`repair`, `repair_available`).
    """

    metadata = {"render_modes": ["ansi", "rgb_array", "human"], "render_fps": 4}

    @property
    def spec(self) -> EnvSpec | None:
        """The Gymnasium spec, with a test salt replaced by its stand-in
        (:attr:`~heuresis_env.generation.salts.SealedSalt.marker`): specs are printed, saved
        and passed around."""
        return self.__dict__.get("_spec")

    @spec.setter
    def spec(self, value: EnvSpec | None) -> None:
        kwargs = getattr(value, "kwargs", None)
        salt = kwargs.get("salt") if isinstance(kwargs, dict) else None
        if (value is not None and isinstance(kwargs, dict) and isinstance(salt, str) and salt
                and not salt.startswith(SEALED_SALT_PREFIX)):
            value = replace(value, kwargs={**kwargs, "salt": salt_marker(salt)})
        self.__dict__["_spec"] = value

    def __init__(self, family: str | EpisodeConfig | None = "lg", *,
                 config: EpisodeConfig | None = None, render_mode: str | None = None,
                 **keywords: Any):
        """``HeuresisEnv(config)`` (or ``gym.make(id, config=config)``) plays an
        :class:`EpisodeConfig`; ``HeuresisEnv(family, **keywords)`` and ``gym.make(id,
        **keywords)`` build one from the keywords of the table above."""
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise UnknownNameError("render mode", render_mode, self.metadata["render_modes"])
        if isinstance(family, EpisodeConfig):
            config, family = family, family.family
        if config is None:
            config = EpisodeConfig.from_keywords(family, **keywords)
        elif not isinstance(config, EpisodeConfig):
            raise HeuresisError(f"config must be an EpisodeConfig, got a "
                                f"{type(config).__name__}; or pass keyword arguments")
        elif keywords or family not in (config.family, None):
            # gym.make(id, config=...) passes the id's family: it must be the config's
            raise HeuresisError(f"pass either a config or keyword arguments, not both (got "
                                f"{sorted(keywords) or ['family=' + repr(family)]} beside "
                                "the config)")
        #: what this environment plays (frozen, checked once)
        self.episode_config = config
        self.render_mode = render_mode
        self.max_steps = self._configured_max_steps = config.max_steps
        salt: SealedSalt | str = config.salt or ""  # "": public, never $HEURESIS_TEST_SALT
        self._salt_holder: Callable[[], SealedSalt | str] = lambda: salt
        d, n, graph_model = config.size
        self.names = tuple(f"X{i + 1}" for i in range(d))
        self._offered = available_tools(config.toolbox, config.guided, config.task,
                                        config.experiments > 0)
        self._task = None if config.task == "graph" else QuestionTask(
            config.family, config.split, d, n, graph_model, config.name_mode,
            config.questions, self._salt_holder)
        self._rl: RLInterface | None = None
        if config.interface == "rl":
            self._rl = RLInterface(d, self._offered, config.target, config.guided,
                                   config.rl_evidence_mode)
            self.action_space = self._rl.action_space
            self.observation_space = self._rl.observation_space
        else:
            self.action_space, self.observation_space = text_view_spaces(d, config.max_steps)
        self._state: EpisodeState | None = None
        self._referee: dict[str, Callable] | None = None
        self._public: PublicInstance | None = None
        self._episode_over = True
        self._trace: TraceRecorder | None = None
        self._episode_count = 0
        self._last_text = ""
        self._last_error = ""
        self._final_info: dict[str, Any] | None = None

    # ---- the configuration, read-only ------------------------------------------------------
    family = property(lambda self: self.episode_config.family)
    split = property(lambda self: self.episode_config.split)
    guided = property(lambda self: self.episode_config.guided)
    target = property(lambda self: self.episode_config.target)
    toolbox = property(lambda self: self.episode_config.toolbox)
    reward_mode = property(lambda self: self.episode_config.reward)
    interface = property(lambda self: self.episode_config.interface)
    max_seconds = property(lambda self: self.episode_config.max_seconds)
    d = property(lambda self: self.episode_config.d)
    n = property(lambda self: self.episode_config.n)
    graph_model = property(lambda self: self.episode_config.graph_model)
    indices = property(lambda self: self.episode_config.indices)
    trace_path = property(lambda self: self.episode_config.trace_path)
    trace_scores = property(lambda self: self.episode_config.trace_scores)
    rl_text = property(lambda self: self.episode_config.rl_text)
    rl_evidence = property(lambda self: self.episode_config.rl_evidence)
    task = property(lambda self: self.episode_config.task)
    name_mode = property(lambda self: self.episode_config.name_mode)
    #: the experiment budget in rows (0: observational; docs/experiments.md)
    experiments = property(lambda self: self.episode_config.experiments)

    # ---- public read-only views -------------------------------------------------------------
    @property
    def instance_index(self) -> int | None:
        return None if self._public is None else self._public.key.index

    @property
    def instance_sha256(self) -> str | None:
        return None if self._public is None else self._public.sha256

    @property
    def data(self) -> np.ndarray:
        """The current instance's data matrix (read-only)."""
        self._require_reset()
        return self._episode.data

    @property
    def working_graph(self) -> Graph:
        """A copy of the working graph."""
        self._require_reset()
        return self._episode.working_graph.copy()

    @property
    def steps_used(self) -> int:
        return self._steps_used if self._state is not None else 0

    @property
    def experiment_rows_used(self) -> int:
        """Rows of experiments drawn in the current episode (0 without an experiment budget)."""
        regimes = None if self._state is None else self._state.regimes
        return 0 if regimes is None else regimes.rows_used

    @property
    def elapsed_seconds(self) -> float:
        return 0.0 if self._state is None else time.perf_counter() - self._started

    @property
    def last_output_digest(self) -> str:
        return text_digest(self._last_text)

    @property
    def trace_file(self) -> Path | None:
        return None if self._trace is None else self._trace.path

    @property
    def offered_tools(self) -> list:
        """The tools of this configuration (toolbox and guided condition), in reference order."""
        return list(self._offered)

    @property
    def rl_actions(self) -> tuple:
        """The RL view's action table (``RLAction`` entries: index, operation, tool, i, j)."""
        if self._rl is None:
            raise HeuresisError("rl_actions belongs to the RL view (interface='rl')")
        return self._rl.table

    def unflatten_observation(self, observation: dict[str, Any]) -> dict[str, np.ndarray]:
        """Matrix views of an RL observation: adjacency (d, d), evidence (pairs, 7), ..."""
        if self._rl is None:
            raise HeuresisError("unflatten_observation belongs to the RL view (interface='rl')")
        return self._rl.unflatten(observation)

    def tool_schemas(self, style: str = "openai") -> list[dict[str, Any]]:
        """Function-calling schemas of the tools offered in this configuration."""

        return tool_schemas(self.toolbox, self.guided, style, self.task, self.experiments > 0)

    def action_masks(self) -> np.ndarray:
        """Valid discrete actions of the RL view (for sb3-contrib's MaskablePPO)."""
        if self._rl is None:
            raise HeuresisError("action_masks() belongs to the RL view; make the environment "
                                "with interface='rl'")
        self._require_reset()
        return self._rl.action_masks(self._episode)

    def _require_reset(self) -> None:
        if self._state is None:
            raise HeuresisError("call reset() before using the environment")

    @property
    def _episode(self) -> EpisodeState:
        """The running episode's state (an error before the first reset)."""
        if self._state is None:
            raise HeuresisError("call reset() before using the environment")
        return self._state

    @property
    def _truth(self) -> dict[str, Callable]:
        """The referee's closures of the running episode (an error before the first reset)."""
        if self._referee is None:
            raise HeuresisError("call reset() before using the environment")
        return self._referee

    @property
    def _instance(self) -> PublicInstance:
        """The public part of the running episode's instance."""
        if self._public is None:
            raise HeuresisError("call reset() before using the environment")
        return self._public

    @property
    def _rl_view(self) -> RLInterface:
        """The RL view (an error on the text view)."""
        if self._rl is None:
            raise HeuresisError("this environment has the text interface, not the RL view")
        return self._rl

    def config(self) -> dict[str, Any]:
        """The keyword arguments that rebuild this environment (the salt excluded)."""
        return {**self.episode_config.keywords(), "max_steps": self.max_steps}

    # ---- reset -------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        # gym.make(..., max_episode_steps=k) wraps the env in TimeLimit, which would cut the
        # episode at step k without scoring it: its k becomes this episode's step budget
        limit = time_limit_around(self)
        self.max_steps = (self._configured_max_steps if limit is None
                          else min(self._configured_max_steps, limit))
        options = check_reset_options(options, self._task is not None)
        self._close_episode_resources()
        question = None
        if self._task is not None:
            question = self._task.open(self._task.choose(options, self.np_random))
            index = question.instance_index
        else:
            index = instance_index(options, self.family, self.split, self.indices,
                                   self.np_random)
        key = InstanceKey(self.family, self.split, index, d=self.d, n=self.n,
                          graph_model=self.graph_model)
        public, referee = open_episode_instance(key, self._salt_holder(),
                                                self.episode_config.table,
                                                self.reward_mode == "shaped")
        names = public.names if self._task is None else self._task.names
        state, evidence = starting_state(public, names, self.guided, self._rl is not None,
                                         self.target, self.toolbox, question,
                                         self.experiments, referee)
        self._public, self._referee = public, referee
        self._state = state
        self.names = names
        self._steps_used = 0
        self._episode_over = False
        self._final_info = None
        self._episode_count += 1
        self._last_error = ""
        if self.reward_mode == "shaped":
            self._shaped_f1 = referee["f1_of_marks"](self._episode.working_graph.marks)[0]
        if self._rl is not None:
            self._rl.start(self._episode, evidence, referee, self.reward_mode == "shaped")
            self._last_text = ""
        else:
            self._last_text = observation_text(self.task_statement())
        self._open_trace(seed, index)
        self._started = time.perf_counter()
        info = {"instance_index": index, "split": self.split, "sha256": public.sha256,
                "instance": public.key.to_dict(), "sealed": public.sealed,
                # the task's public input, for scripted policies that compute on it directly
                "data": public.X.copy(), "names": list(names),
                "guided": self.guided, "n_tools": len(self._offered)}
        if self.experiments:
            info["experiment_rows"] = self.experiments
        if self._task is not None:
            info["question"] = self._task.info()
        self._show_human()
        return self._observation(), info

    def task_statement(self) -> str:
        """The first observation's text: the task, the rules, and the tools."""
        self._require_reset()
        state = self._episode
        tools = tool_lines(self._offered, self.experiments > 0)
        if self._task is not None:
            return self._task.statement(state.n, question_budget(self.max_steps,
                                                                 self.max_seconds), tools)
        return graph_task_statement(state.n, state.d, state.names, self.target, self.guided,
                                    self.max_steps, self.max_seconds,
                                    self._instance.description,
                                    self._instance.has_ground_truth, tools, self.experiments)

    # ---- step --------------------------------------------------------------------------------
    def step(self, action: Any) -> StepResult:
        self._require_reset()
        if self._episode_over:
            raise HeuresisError("the episode is over; call reset() to start the next one")
        step_start = time.perf_counter()
        self._steps_used += 1
        self._episode.call_number = self._steps_used
        before = self._episode.working_graph.marks.copy()
        try:
            if self._rl is not None:
                return self._step_rl(action, step_start)
            return self._step_text(action, step_start)
        except Exception as exc:  # noqa: BLE001 - whatever the action object, an error step
            if self._episode_over:
                raise
            return self._failed_step(action, before, exc, step_start)

    def _failed_step(self, action: Any, before: np.ndarray, exc: Exception,
                     step_start: float) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """An action whose handling raised is a rejected action like any other: its error is
        the observation, the step counts, and the working graph is restored."""
        state = self._episode
        state.working_graph = type(state.working_graph)(state.names, before)
        if self._rl is not None:
            self._rl.resynchronize(state)
        elif self.reward_mode == "shaped":
            self._shaped_f1 = self._truth["f1_of_marks"](before)[0]
        error = f"the action could not be handled ({describe_exception(exc)})"
        self._last_text = observation_text(f"Error: {error}")
        self._last_error = observation_text(error)
        info: dict[str, Any] = {"error": error}
        if self._rl is None:
            info = {"step": self._steps_used, "tool": None, "error": error, "data": {}}
        if self._trace is not None:
            try:
                self._record_step(action, None, error, before, step_start, None)
            except Exception:  # noqa: BLE001 - the trace is best effort for such an action
                pass
        return self._finish_step(0.0, False, info)

    def _step_text(self, action: Any, step_start: float) -> StepResult:
        state = self._episode
        before = state.working_graph.marks.copy()
        parsed, result = run_text_action(state, action, self.toolbox, self.guided, self.task)
        if result.error is not None:
            state.working_graph = type(state.working_graph)(state.names, before)
        self._last_text = observation_text(result.text)
        self._last_error = "" if result.error is None else observation_text(result.error)
        reward = 0.0
        graph_changed = not np.array_equal(before, state.working_graph.marks)
        if graph_changed and self.reward_mode == "shaped":
            reward = self._shaped_delta()
        info: dict[str, Any] = {"step": self._steps_used,
                                "tool": None if parsed is None else parsed.tool.name,
                                "error": result.error, "data": dict(result.data)}
        self._record_step(action, parsed, result.error, before, step_start,
                          None if parsed is None else parsed.arguments)
        return self._finish_step(reward, result.submitted, info)

    def _shaped_delta(self) -> float:
        f1 = self._truth["f1_of_marks"](self._episode.working_graph.marks)[0]
        delta, self._shaped_f1 = f1 - self._shaped_f1, f1
        return float(delta)

    def _step_rl(self, action: Any, step_start: float) -> StepResult:
        outcome = self._rl_view.execute(self._episode, action, record=self._trace is not None)
        reward = outcome.reward
        info: dict[str, Any] = {}
        if outcome.error is not None:
            info = {"error": outcome.error}
        if self.rl_text or self._trace is not None or self.render_mode in ("ansi", "human"):
            self._last_text = self._rl_view.describe(self._episode, outcome)
        if self._trace is not None:
            self._record_rl_step(action, outcome, step_start)
        return self._finish_step(reward, outcome.submitted, info)

    def _finish_step(self, reward: float, submitted: bool, info: dict[str, Any]
                     ) -> StepResult:
        terminated = bool(submitted)
        reason = end_reason(terminated, self._steps_used, self.max_steps, self.max_seconds,
                            self.elapsed_seconds)
        truncated = reason is not None and not terminated
        if reason is not None:
            final = self.end_episode(reason)
            info.update(final)
            if self.reward_mode == "f1":  # a question episode pays 1 for a correct answer
                paid = final["scores"]["f1" if self._task is None else "correct"]
                reward += 0.0 if paid is None else paid  # None: a table without a graph
        self._show_human()
        return self._observation(), float(reward), terminated, truncated, info

    def end_episode(self, reason: str = "aborted") -> dict[str, Any]:
        """End the episode now and score the working graph as submitted; returns the final info.

        ``step`` calls this when the agent submits or a budget runs out; a harness may call it
        to abort an episode (the trace records the reason).
        """
        self._require_reset()
        if self._episode_over:
            return dict(self._final_info or {})
        if reason not in TERMINATION_REASONS:
            raise UnknownNameError("termination reason", reason, TERMINATION_REASONS)
        scores, question = final_scores(self._truth, self._task, self._episode)
        self._episode_over = True
        self._final_info = {"termination_reason": reason, "submitted": reason == "submitted",
                            "scores": scores, "ground_truth": self._instance.has_ground_truth,
                            "steps_used": self._steps_used,
                            "instance_index": self._instance.key.index,
                            "final_graph": self._episode.working_graph.to_dict(),
                            **(question or {})}
        if self.experiments:
            self._final_info["experiment_rows_used"] = self.experiment_rows_used
        if self._trace is not None:
            outcome = ({"scores": scores, **(question or {})} if self.trace_scores
                       else {"scores_withheld": True})
            self._trace.close({"termination_reason": reason,
                               "final_graph": self._episode.working_graph.to_dict(),
                               "steps_used": self._steps_used,
                               "seconds": self.elapsed_seconds, **outcome})
        return {**self._final_info, "scores": dict(scores)}

    # ---- observations --------------------------------------------------------------------
    def _observation(self) -> dict[str, Any]:
        if self._rl is not None:
            return self._rl.observation(self._episode, self.max_steps - self._steps_used,
                                        self.max_steps)
        return text_observation(self._last_text, self._episode.working_graph.marks,
                                self.max_steps - self._steps_used, self._last_error)

    # ---- traces ------------------------------------------------------------------------------
    def _open_trace(self, seed: int | None, index: int) -> None:
        if self.trace_path is None:
            return
        header = episode_header(self.config(), self._instance, seed, self._episode_count,
                                self._episode, self._offered,
                                None if self._task is None else self._task.info())
        self._trace = TraceRecorder(
            self.trace_path / trace_file_name(self.family, self.split, index), header)

    def _record_step(self, action: Any, parsed: ParsedAction | None, error: str | None,
                     before: np.ndarray, step_start: float, arguments: dict | None) -> None:
        if self._trace is None:
            return
        self._trace.record_text_step(
            step=self._steps_used, action=action, parsed=parsed, arguments=arguments,
            error=error, output=self._last_text, state=self._episode, before=before,
            elapsed=time.perf_counter() - self._started, step_start=step_start)

    def _record_rl_step(self, action: Any, outcome: RLOutcome, step_start: float) -> None:
        if self._trace is None:
            return
        self._trace.record_rl_step(
            step=self._steps_used, action=action, outcome=outcome, output=self._last_text,
            elapsed=time.perf_counter() - self._started, step_start=step_start)

    # ---- rendering -----------------------------------------------------------------------------
    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            gym.logger.warn("render() needs render_mode='ansi', 'rgb_array' or 'human' at "
                            "construction")
            return None
        self._require_reset()
        if self.render_mode == "ansi":
            return self._render_text()
        if self.render_mode == "human":  # printed after each reset and step; None by convention
            self._show_human()
            return None
        return self._render_rgb()

    def _show_human(self) -> None:
        """``render_mode="human"``: the text rendering printed to stdout (a terminal is the
        display of a text environment; no window, no pygame)."""
        if self.render_mode == "human":
            print(self._render_text(), flush=True)

    def _render_text(self) -> str:
        heading = (f"Heuresis {self.family}/{self.split}/{self.instance_index} - step "
                   f"{self._steps_used} of {self.max_steps}")
        return render_text(heading, self._episode.working_graph, self._last_text,
                           self._final_info if self._episode_over else None)

    def _render_rgb(self) -> np.ndarray:
        return draw_episode(self._episode.working_graph,
                            self._truth["reveal"]() if self._episode_over else None)

    # ---- closing ---------------------------------------------------------------------------------
    def _close_episode_resources(self) -> None:
        if self._trace is not None and not self._trace.closed:
            self._trace.close({"termination_reason": "unfinished",
                               "steps_used": getattr(self, "_steps_used", 0),
                               "final_graph": self._episode.working_graph.to_dict()})
        self._trace = None
        if self._state is not None:
            close_sandbox(self._episode)

    def close(self) -> None:
        self._close_episode_resources()
        super().close()


#: the environment's keyword arguments (any other is refused, naming these)
ENV_ARGUMENTS: tuple[str, ...] = ("family", "config", *KEYWORDS)
