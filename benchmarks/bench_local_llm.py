"""How fast the local models run on this machine's CPU: load time, prompt tokens/s (cold, and
with the prefix cache — the ratio of the two measured in the same run), reply tokens/s, free
and under constrained decoding, seconds per episode of the ``llm`` policy under the
comparison's budgets (``heuresis llm-compare``), and the **throughput of batched decoding**:
B concurrent requests (the next turns of B episodes: the same system prompt and statement, each
its own last turn) decoded together, total reply tokens/s at B = 1, 4, 16 and the ratio to
B = 1 in the same run, the process's CPU seconds (tokens per CPU second: what a loaded
machine's share of the cores buys) and the load average (``uptime``) at each.

The prompt is a real one: the system prompt and the task statement of a d = 10 episode, as the
policy sends them (text actions, prompt level 1); the cached case appends one observation and
asks again, as the next turn of an episode does.

Usage: ``python benchmarks/bench_local_llm.py [--models smollm2-135m,gemma3-270m]
[--tokens 64] [--episodes 2] [--threads 1] [--batches 1,4,16] [--throughput-only]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
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


def throughput(model: LocalModel, sizes: list[int], tokens: int) -> list[dict[str, float]]:
    """Total reply tokens/s of ``size`` concurrent requests, each size in turn (module
    docstring); the shared prompt is computed once before, as a server's first episode does."""
    base = [{"role": "system", "content": system_prompt(1, "none", native_tools=False)},
            {"role": "user", "content": task_statement()}]
    model.generate(model.render(base), 1)
    rows = []
    for size in sizes:
        prompts = [model.render(base + [
            {"role": "assistant", "content": f"Let me look at X{index % 10 + 1} first."},
            {"role": "user", "content": f"Observation:\nError: the action is not valid JSON "
                                        f"({index}).\n\n[{index % 5 + 1} steps left]"}])
            for index in range(size)]
        replies: list = [None] * size
        start = threading.Barrier(size)

        def ask(index: int, prompts: list = prompts, replies: list = replies,
                start: threading.Barrier = start) -> None:
            start.wait()
            replies[index] = model.generate(prompts[index], tokens)

        load = os.getloadavg()[0]
        cpu = time.process_time()
        started = time.perf_counter()
        threads = [threading.Thread(target=ask, args=(i,)) for i in range(size)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu
        generated = sum(r.completion_tokens for r in replies)
        rows.append({"batch": size, "tokens": generated, "seconds": seconds,
                     "tok_s": generated / seconds, "largest": max(r.batch for r in replies),
                     "cpu_s": cpu, "tok_cpu_s": generated / cpu if cpu else float("nan"),
                     "load": (load + os.getloadavg()[0]) / 2})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(LOCAL_MODELS))
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batches", default="1,4,16",
                        help="concurrent requests for the throughput table (default 1,4,16)")
    parser.add_argument("--throughput-only", action="store_true",
                        help="only the batched-decoding throughput table")
    args = parser.parse_args()
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    sizes = [int(b) for b in args.batches.split(",") if b.strip()]
    print(f"{'model':14} {'batch':>5} {'reply tokens':>12} {'seconds':>8} {'tokens/s':>8} "
          f"{'vs batch 1':>10} {'CPU s':>6} {'tokens/CPU s':>12} {'load':>5}")
    for name in names:
        model = LocalModel(name, prepare_model(name), threads=args.threads,
                           cache_slots=max(sizes) + 2, max_batch=max(sizes))
        rows = throughput(model, sizes, args.tokens)
        model.close()
        single = next((r["tok_s"] for r in rows if r["batch"] == 1), float("nan"))
        for r in rows:
            print(f"{name:14} {r['batch']:5d} {r['tokens']:12d} {r['seconds']:8.1f} "
                  f"{r['tok_s']:8.1f} {r['tok_s'] / single:9.1f}x {r['cpu_s']:6.1f} "
                  f"{r['tok_cpu_s']:12.1f} {r['load']:5.1f}", flush=True)
    if args.throughput_only:
        return
    print()
    print(f"{'model':14} {'load s':>7} {'prompt':>6} {'prefill tok/s':>13} "
          f"{'cached turn s':>13} {'vs cold':>8} {'decode tok/s':>12} "
          f"{'constrained':>11} {'s/episode':>9}")
    for name in names:
        r = measure(name, args.tokens, args.episodes, args.threads)
        print(f"{name:14} {r['load_s']:7.1f} {r['prompt_tokens']:6d} "
              f"{r['cold_prefill_tok_s']:13.0f} {r['warm_prefill_s']:13.2f} "
              f"{r['cold_prefill_s'] / r['warm_prefill_s']:7.1f}x {r['decode_tok_s']:12.1f} "
              f"{r['constrained_decode_tok_s']:11.1f} {r['episode_s']:9.1f}", flush=True)


if __name__ == "__main__":
    main()
