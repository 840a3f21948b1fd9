"""How fast the local models run on this machine's CPU: load time, prompt tokens/s (cold, and
with the prefix cache — the ratio of the two measured in the same run), reply tokens/s, free
and under constrained decoding, and seconds per episode of the ``llm`` policy under the
comparison's budgets (``heuresis llm-compare``).

The prompt is a real one: the system prompt and the task statement of a d = 10 episode, as the
policy sends them (text actions, prompt level 1); the cached case appends one observation and
asks again, as the next turn of an episode does.

Usage: ``python benchmarks/bench_local_llm.py [--models smollm2-135m,gemma3-270m]
[--tokens 64] [--episodes 2] [--threads 1]``
"""

from __future__ import annotations

import argparse
import statistics
import time

from agents.llm.backends import OpenAIChatBackend
from agents.llm.comparison import COMPARISON_SETTINGS
from agents.llm.local_models import LOCAL_MODELS, LocalModel, prepare_model
from agents.llm.local_server import LocalModelResponder
from agents.llm.parsing import action_schema
from agents.llm.policy import LLMPolicy
from agents.llm.prompts import system_prompt
from agents.llm.server import ChatServer
from heuresis_env.env import HeuresisEnv, tool_schemas
from heuresis_env.evaluation.episode import EpisodeRunner, EpisodeTask, RunSpec


def task_statement() -> str:
    env = HeuresisEnv(family="lg", split="dev", d=10, n=200, max_steps=6)
    try:
        observation, _ = env.reset(seed=0, options={"index": 0})
        return str(observation["text"])
    finally:
        env.close()


def measure(name: str, tokens: int, episodes: int, threads: int) -> dict[str, float]:
    started = time.perf_counter()
    folder = prepare_model(name)
    prepared = time.perf_counter() - started
    model = LocalModel(name, folder, threads=threads)
    messages = [{"role": "system", "content": system_prompt(1, "none", native_tools=False)},
                {"role": "user", "content": task_statement()}]
    prompt = model.render(messages)
    cold = model.generate(prompt, tokens)
    messages += [{"role": "assistant", "content": cold.text or "{}"},
                 {"role": "user", "content": "Observation:\nError: the action is not valid "
                                             "JSON.\n\n[4 steps left]"}]
    warm = model.generate(model.render(messages), tokens)
    schema = action_schema(tool_schemas("full", False, "openai", "graph"))
    constrained = model.generate(model.render(messages), tokens, schema=schema)
    seconds = []
    for index in range(episodes):
        server = ChatServer(responder=LocalModelResponder(model), model=name)
        chat = OpenAIChatBackend(name, base_url=server.url, api_key="local", max_retries=0,
                                 timeout=600, environment_proxy=False)
        policy = LLMPolicy(chat, native_tools=False, resources=[server])
        spec = RunSpec(policy="llm", policy_options={"backend": "local", "model": name},
                       settings=COMPARISON_SETTINGS, d=10, n=200)
        runner = EpisodeRunner(spec, "dev", policy=policy)
        try:
            outcome = runner.run(EpisodeTask(f"wild/dev/{index}", "wild", "dev", index, 0,
                                             index))
        finally:
            runner.close()
        seconds.append(float(outcome.record["wall_seconds"]))
    decode = lambda g: g.completion_tokens / g.decode_seconds if g.decode_seconds else 0.0  # noqa: E731
    return {
        "prepare_s": prepared, "load_s": model.load_seconds, "prompt_tokens": cold.prompt_tokens,
        "cold_prefill_tok_s": cold.prompt_tokens / cold.prefill_seconds,
        "warm_new_tokens": warm.prompt_tokens - warm.cached_tokens,
        "warm_prefill_s": warm.prefill_seconds, "cold_prefill_s": cold.prefill_seconds,
        "decode_tok_s": decode(cold), "constrained_decode_tok_s": decode(constrained),
        "episode_s": statistics.median(seconds) if seconds else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(LOCAL_MODELS))
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    print(f"{'model':14} {'load s':>7} {'prompt':>6} {'prefill tok/s':>13} "
          f"{'cached turn s':>13} {'vs cold':>8} {'decode tok/s':>12} "
          f"{'constrained':>11} {'s/episode':>9}")
    for name in (m.strip() for m in args.models.split(",") if m.strip()):
        r = measure(name, args.tokens, args.episodes, args.threads)
        print(f"{name:14} {r['load_s']:7.1f} {r['prompt_tokens']:6d} "
              f"{r['cold_prefill_tok_s']:13.0f} {r['warm_prefill_s']:13.2f} "
              f"{r['cold_prefill_s'] / r['warm_prefill_s']:7.1f}x {r['decode_tok_s']:12.1f} "
              f"{r['constrained_decode_tok_s']:11.1f} {r['episode_s']:9.1f}", flush=True)


if __name__ == "__main__":
    main()
