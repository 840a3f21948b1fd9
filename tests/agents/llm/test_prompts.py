"""Prompts (agents.llm.prompts): levels are cumulative and never name the family; options are
checked."""

from __future__ import annotations

import re

import pytest

from agents.llm.backends import ReplayBackend
from agents.llm.policy import LLMPolicy
from agents.llm.prompts import PROMPT_LEVELS, final_request, system_prompt
from heuresis_env.errors import UnknownNameError
from heuresis_env.policy import EpisodeSettings
from tests.agents.llm.llm_fixtures import NAMES

FAMILY_WORDS = ("lg", "anm", "hetero", "wild", "mixed", "gauntlet")


@pytest.mark.parametrize("target", ["none", "cpdag", "dag"])
@pytest.mark.parametrize("toolbox", ["full", "minimal"])
@pytest.mark.parametrize("guided", [False, True])
def test_prompt_levels_are_cumulative_and_never_name_the_family(target, toolbox, guided):
    prompts = [system_prompt(level, target, toolbox=toolbox, guided=guided)
               for level in PROMPT_LEVELS]
    for lower, higher in zip(prompts, prompts[1:]):
        assert higher.startswith(lower) and len(higher) > len(lower)
    for prompt in prompts + [final_request(NAMES, target, "steps")]:
        words = set(re.findall(r"[a-z]+", prompt.lower()))
        assert not words & set(FAMILY_WORDS)
    full = prompts[-1]
    assert ("run_code" in full) == (toolbox == "full")
    assert ("stability" in full) == (toolbox == "full")
    assert ("deletion_log" in full) == guided
    assert "Stated target" in prompts[0] and "PC" not in prompts[0]
    assert ("orientation_probe" in full) == (toolbox == "full" and target != "none")


def test_prompt_options_are_checked():
    with pytest.raises(UnknownNameError, match="prompt level"):
        system_prompt(5, "none")
    with pytest.raises(UnknownNameError, match="target"):
        system_prompt(1, "pag")
    policy = LLMPolicy(ReplayBackend([]))
    with pytest.raises(UnknownNameError):
        policy.configure(EpisodeSettings(prompt_level=0))
