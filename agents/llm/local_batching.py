"""Batched generation for a local model (:class:`~agents.llm.local_models.LocalModel`): the
requests of concurrent clients decoded together, one forward pass per token for all of them.

A 135-270 M model on a CPU is memory-bound at one sequence — each token reads every weight —
so decoding B sequences in one pass costs little more than decoding one: the throughput of a
server with many concurrent episodes is the batch's, not a single stream's.

:class:`BatchedDecoder` runs one scheduler thread per model:

- a request is **admitted** at a step boundary (continuous batching): a request that finds the
  batch empty waits ``window`` seconds for others to arrive with it; one that arrives while
  the batch runs joins at the next step;
- admission computes the request's prompt alone, from the longest prefix it shares with a kept
  conversation (**prefix cache**: the slots of :class:`PrefixCache`; a prompt is kept as soon
  as it is computed, so requests arriving together share their common part), and picks its
  first token from that pass;
- the running sequences' keys and values are **left-padded** into one buffer ``(B, heads,
  columns, dim)`` with an attention mask over the padding; each step feeds every sequence its
  last token at its own position (``position_ids``), so the rotary embeddings and the causal
  mask are those of the sequence alone — greedy decoding gives the tokens decoding one by one
  gives (a test checks it);
- every sequence stops on its own (an end-of-turn token, its ``max_tokens``, a complete
  constrained value, its deadline, its client gone) and keeps its own constrained-decoding
  matcher, temperature and seeded generator; a finished sequence leaves the batch at the next
  step boundary, its conversation kept in the prefix cache.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BatchStats", "BatchedDecoder", "PrefixCache", "PrefixSlot"]

#: how long a request that finds the batch empty waits for others (seconds)
DEFAULT_WINDOW = 0.03
#: the most sequences decoded in one pass
DEFAULT_MAX_BATCH = 32


# ---- the prefix cache ---------------------------------------------------------------------------

@dataclass
class PrefixSlot:
    """A kept conversation: its token ids and each layer's keys and values ``(1, heads,
    len(ids), dim)``."""

    ids: list[int]
    layers: list[tuple[Any, Any]]
    used: float = field(default_factory=time.monotonic)


class PrefixCache:
    """The key/value tensors of up to ``slots`` conversations; a request starts from the
    longest prefix it shares with one of them. A conversation that another kept one extends
    is dropped (the next turn of an episode replaces its last one)."""

    def __init__(self, slots: int):
        self.slots = max(1, int(slots))
        self._kept: list[PrefixSlot] = []

    def __len__(self) -> int:
        return len(self._kept)

    def longest(self, ids: Sequence[int]) -> tuple[PrefixSlot | None, int]:
        """The slot sharing the longest prefix with ``ids`` and that prefix's length (at most
        ``len(ids) - 1``: the last prompt token is always computed, for its logits)."""
        best, length = None, 0
        for slot in self._kept:
            shared = _common_prefix(slot.ids, ids)
            if shared > length:
                best, length = slot, shared
        length = min(length, len(ids) - 1)
        if best is None or length <= 0:
            return None, 0
        best.used = time.monotonic()
        return best, length

    def clear(self) -> None:
        self._kept = []

    def keep(self, ids: list[int], layers: list[tuple[Any, Any]]) -> None:
        self._kept = [s for s in self._kept
                      if not (len(s.ids) <= len(ids) and ids[:len(s.ids)] == s.ids)]
        self._kept.append(PrefixSlot(list(ids), layers))
        self._kept.sort(key=lambda slot: slot.used, reverse=True)
        del self._kept[self.slots:]


def _common_prefix(first: Sequence[int], second: Sequence[int]) -> int:
    length = min(len(first), len(second))
    for index in range(length):
        if first[index] != second[index]:
            return index
    return length


# ---- one request ----------------------------------------------------------------------------------

@dataclass
class _Sequence:
    """A request in flight: what it asked for, and its decoding state."""

    prompt: list[int]
    max_tokens: int
    matcher: Any
    temperature: float
    generator: Any
    deadline: float | None
    cancelled: Callable[[], bool] | None
    arrived: float = field(default_factory=time.perf_counter)
    done: threading.Event = field(default_factory=threading.Event)
    #: token ids whose keys and values are computed (the prompt, then fed output tokens)
    ids: list[int] = field(default_factory=list)
    output: list[int] = field(default_factory=list)
    pending: int | None = None
    cached: int = 0
    finish: str = "length"
    error: str | None = None
    failure: BaseException | None = None
    bitmask: Any = None
    prefill_seconds: float = 0.0
    finished_at: float = 0.0
    batch: int = 0
    #: the keys and values of ``ids`` before the sequence joins the batch
    layers: list[tuple[Any, Any]] | None = None


@dataclass
class BatchStats:
    """What the decoder has done: passes, the sequences they decoded, the largest batch."""

    steps: int = 0
    sequence_steps: int = 0
    largest: int = 0
    admitted: int = 0


# ---- the decoder ----------------------------------------------------------------------------------

class BatchedDecoder:
    """The scheduler thread of one model (module docstring). ``model`` is the
    :class:`~agents.llm.local_models.LocalModel` (its torch module, stop ids, token picking
    and constrained-decoding mask); :meth:`run` blocks until the sequence is finished."""

    def __init__(self, model: Any, *, cache_slots: int = 3, window: float = DEFAULT_WINDOW,
                 max_batch: int = DEFAULT_MAX_BATCH):
        self.model = model
        self.window = float(window)
        self.max_batch = max(1, int(max_batch))
        self.prefixes = PrefixCache(cache_slots)
        self._windows = sliding_windows(model.model.config)
        self.stats = BatchStats()
        self._torch = model._torch
        self._waiting: list[_Sequence] = []
        self._condition = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        # the batch: its sequences, keys/values buffers per layer, the mask, the columns used
        self._rows: list[_Sequence] = []
        self._buffers: list[tuple[Any, Any]] = []
        self._mask: Any = None
        self._columns = 0

    def run(self, sequence: _Sequence) -> _Sequence:
        with self._condition:
            if self._closed:
                raise RuntimeError("the local model's decoder is closed")
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="local-model-decoder",
                                                daemon=True)
                self._thread.start()
            self._waiting.append(sequence)
            self._condition.notify_all()
        sequence.done.wait()
        if sequence.failure is not None:
            raise sequence.failure
        return sequence

    def close(self, timeout: float = 30.0) -> None:
        """Stop the thread (after the pass it is in) and fail what still waits."""
        with self._condition:
            self._closed = True
            self._condition.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    # ---- the scheduler ------------------------------------------------------------------------
    def _loop(self) -> None:
        torch = self._torch
        with torch.inference_mode():
            while True:
                with self._condition:
                    while not self._waiting and not self._rows and not self._closed:
                        self._condition.wait()
                    if self._closed:
                        self._fail_all(RuntimeError("the local model's decoder was closed"))
                        return
                    idle = not self._rows
                if idle and self.window > 0:
                    time.sleep(self.window)  # gather the requests arriving together
                with self._condition:
                    room = self.max_batch - len(self._rows)
                    arriving, self._waiting = self._waiting[:room], self._waiting[room:]
                try:
                    self._admit(arriving)
                    if self._rows:
                        self._step()
                except BaseException as exc:  # noqa: BLE001 - every waiting client gets it
                    self._fail_all(exc, arriving)

    def _fail_all(self, exc: BaseException, also: Sequence[_Sequence] = ()) -> None:
        with self._condition:
            everyone = [*self._rows, *also, *(self._waiting if self._closed else [])]
            if self._closed:
                self._waiting = []
        for sequence in everyone:
            if not sequence.done.is_set():
                sequence.failure = exc
                sequence.done.set()
        self._rows, self._buffers, self._mask, self._columns = [], [], None, 0

    # ---- admission: the prompt, alone, from its longest kept prefix ----------------------------
    def _admit(self, arriving: Sequence[_Sequence]) -> None:
        from transformers import DynamicCache

        torch = self._torch
        joining = []
        for sequence in arriving:
            if self._gone(sequence):  # its client gave up while it waited: compute nothing
                sequence.finish = "time"
                sequence.finished_at = time.perf_counter()
                sequence.done.set()
                continue
            started = time.perf_counter()
            slot, cached = self.prefixes.longest(sequence.prompt)
            cache = DynamicCache()
            if slot is not None:
                for index, (keys, values) in enumerate(slot.layers):
                    cache.update(keys[:, :, :cached], values[:, :, :cached], index)
            sequence.cached = cached
            sequence.ids = list(sequence.prompt)
            logits = self.model.model(
                input_ids=torch.tensor([sequence.prompt[cached:]]), cache=cache,
                use_cache=True, logits_to_keep=1).logits[0, -1].float()
            sequence.layers = [(layer.keys, layer.values) for layer in cache.layers]
            sequence.prefill_seconds = time.perf_counter() - started
            # kept at once: a request arriving with it (the same system prompt and task
            # statement, another episode) starts from it instead of computing it again
            self.prefixes.keep(sequence.ids, sequence.layers)
            self.stats.admitted += 1
            if self._advance(sequence, logits):
                self._finish(sequence, sequence.layers)
            else:
                joining.append(sequence)
        self._rebuild(joining)

    # ---- one decoding step for the whole batch ------------------------------------------------
    def _step(self) -> None:
        torch = self._torch
        rows = self._rows
        batch = len(rows)
        self.stats.steps += 1
        self.stats.sequence_steps += batch
        self.stats.largest = max(self.stats.largest, batch)
        column = self._columns
        self._ensure_columns(column + 1)
        self._mask[:, column] = True
        for sequence in rows:
            sequence.batch = max(sequence.batch, batch)
        cache = self._cache()
        logits = self.model.model(
            input_ids=torch.tensor([[s.pending] for s in rows]),
            position_ids=torch.tensor([[len(s.ids)] for s in rows]),
            attention_mask=self._mask[:, :column + 1], cache=cache, use_cache=True,
            logits_to_keep=1).logits[:, -1].float()
        self._columns = column + 1
        finished = []
        for index, sequence in enumerate(rows):
            sequence.ids.append(sequence.pending)
            if self._advance(sequence, logits[index]):
                finished.append(index)
        for index in finished:
            sequence = rows[index]
            length = len(sequence.ids)
            layers = [(keys[index:index + 1, :, self._columns - length:self._columns].clone(),
                       values[index:index + 1, :, self._columns - length:self._columns].clone())
                      for keys, values in self._buffers]
            self._finish(sequence, layers)
        if finished:
            self._rebuild([])

    def _advance(self, sequence: _Sequence, logits: Any) -> bool:
        """Pick the sequence's next token from ``logits``; True when it is finished (the
        rules of the one-by-one loop this replaced, in its order)."""
        model = self.model
        if self._gone(sequence):
            sequence.finish = "time"
            return True
        matcher = sequence.matcher
        if matcher is not None:
            sequence.bitmask = model._mask(matcher, logits, sequence.bitmask)
        token = model._pick(logits, sequence.temperature, sequence.generator)
        if matcher is not None and not matcher.consume_token(token):
            sequence.finish = "stop"
            sequence.error = str(matcher.get_error() or "refused a token")
            return True
        if token in model.stop_ids:
            sequence.finish = "stop"
            return True
        sequence.output.append(token)
        if matcher is not None and matcher.is_stopped():
            sequence.finish = "stop"
            return True
        if len(sequence.output) >= sequence.max_tokens:
            sequence.finish = "length"
            return True
        sequence.pending = token
        return False

    @staticmethod
    def _gone(sequence: _Sequence) -> bool:
        """Its deadline passed, or its client went away."""
        return (sequence.deadline is not None and time.monotonic() > sequence.deadline) or (
            sequence.cancelled is not None and sequence.cancelled())

    def _finish(self, sequence: _Sequence, layers: list[tuple[Any, Any]]) -> None:
        self.prefixes.keep(sequence.ids, layers)
        sequence.layers = None
        sequence.finished_at = time.perf_counter()
        sequence.done.set()

    # ---- the batch's buffers ------------------------------------------------------------------
    def _cache(self) -> Any:
        from transformers import DynamicCache

        cache = DynamicCache()
        cache.layers = [_BufferLayer(keys, values, self._columns, window)
                        for (keys, values), window in zip(self._buffers, self._windows,
                                                          strict=True)]
        return cache

    def _ensure_columns(self, needed: int) -> None:
        torch = self._torch
        capacity = self._mask.shape[1]
        if needed <= capacity:
            return
        more = max(needed - capacity, 32)
        self._buffers = [tuple(torch.cat([t, t.new_zeros(*t.shape[:2], more, t.shape[3])], 2)
                               for t in pair) for pair in self._buffers]
        self._mask = torch.cat([self._mask, self._mask.new_zeros(len(self._rows), more)], 1)

    def _rebuild(self, joining: Sequence[_Sequence]) -> None:
        """The batch without its finished sequences and with ``joining``: every sequence
        right-aligned at the new last column, the padding on the left masked."""
        torch = self._torch
        staying = [(i, s) for i, s in enumerate(self._rows) if not s.done.is_set()]
        if not joining and len(staying) == len(self._rows):
            return
        rows = [s for _, s in staying] + list(joining)
        if not rows:
            self._rows, self._buffers, self._mask, self._columns = [], [], None, 0
            return
        columns = max(len(s.ids) for s in rows)
        capacity = columns + max(s.max_tokens - len(s.output) for s in rows) + 1
        template = (joining[0].layers if joining else
                    [(k[:1], v[:1]) for k, v in self._buffers])
        buffers = [(keys.new_zeros(len(rows), keys.shape[1], capacity, keys.shape[3]),
                    values.new_zeros(len(rows), values.shape[1], capacity, values.shape[3]))
                   for keys, values in template]
        mask = torch.zeros(len(rows), capacity, dtype=torch.bool)
        for row, sequence in enumerate(rows):
            length = len(sequence.ids)
            start = columns - length
            mask[row, start:columns] = True
        for layer, (keys, values) in enumerate(buffers):
            for row, (old, _) in enumerate(staying):
                length = len(self._rows[old].ids)
                source = slice(self._columns - length, self._columns)
                keys[row, :, columns - length:columns] = self._buffers[layer][0][old, :, source]
                values[row, :, columns - length:columns] = self._buffers[layer][1][old, :, source]
            for row, sequence in enumerate(joining, start=len(staying)):
                length = len(sequence.ids)
                keys[row, :, columns - length:columns] = sequence.layers[layer][0][0]
                values[row, :, columns - length:columns] = sequence.layers[layer][1][0]
        for sequence in joining:
            sequence.layers = None
        self._rows, self._buffers, self._mask, self._columns = rows, buffers, mask, columns


def _buffer_layer_class() -> type:
    from transformers.cache_utils import DynamicLayer

    class BufferLayer(DynamicLayer):
        """A cache layer over preallocated buffers ``(B, heads, capacity, dim)``: a step
        writes its keys and values in place instead of concatenating the whole cache."""

        def __init__(self, keys: Any, values: Any, length: int, window: int | None):
            super().__init__()
            self.buffer_keys, self.buffer_values, self.length = keys, values, length
            self.device = keys.device
            self.is_initialized = True
            #: a sliding-window layer (Gemma 3's local layers) attends to its last ``window``
            #: columns only: it is given those, not the whole buffer (as transformers' own
            #: sliding layers do; the mask's offset says where they start)
            self.window = window
            self.is_sliding = window is not None
            self.keys, self.values = keys[:, :, :length], values[:, :, :length]

        def lazy_initialization(self, key_states: Any, value_states: Any) -> None:
            return None

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any
                   ) -> tuple[Any, Any]:
            end = self.length + key_states.shape[-2]
            if end > self.buffer_keys.shape[-2]:
                raise RuntimeError("the batch's key/value buffer is full")
            self.buffer_keys[:, :, self.length:end] = key_states
            self.buffer_values[:, :, self.length:end] = value_states
            first = self._first(key_states.shape[-2])
            self.length = end
            self.keys = self.buffer_keys[:, :, :end]
            self.values = self.buffer_values[:, :, :end]
            return self.buffer_keys[:, :, first:end], self.buffer_values[:, :, first:end]

        def _first(self, query_length: int) -> int:
            """The first column the next ``query_length`` tokens attend to."""
            if self.window is None:
                return 0
            return max(self.length - self.window + 1, 0)

        def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
            first = self._first(query_length)
            return self.length + query_length - first, first

        def get_seq_length(self) -> int:
            return self.length

    return BufferLayer


_BUFFER_LAYER: type | None = None


def _BufferLayer(keys: Any, values: Any, length: int,  # noqa: N802 - a class, built late
                 window: int | None = None) -> Any:
    global _BUFFER_LAYER
    if _BUFFER_LAYER is None:
        _BUFFER_LAYER = _buffer_layer_class()
    return _BUFFER_LAYER(keys, values, length, window)


def sliding_windows(config: Any) -> list[int | None]:
    """Each layer's sliding window (None: full attention) from a model's config."""
    layers = int(config.num_hidden_layers)
    kinds = getattr(config, "layer_types", None) or ["full_attention"] * layers
    window = getattr(config, "sliding_window", None)
    return [int(window) if kind == "sliding_attention" and window else None for kind in kinds]


def new_sequence(prompt: Sequence[int], max_tokens: int, *, matcher: Any = None,
                 temperature: float = 0.0, generator: Any = None, deadline: float | None = None,
                 cancelled: Callable[[], bool] | None = None) -> _Sequence:
    """A request for :meth:`BatchedDecoder.run`."""
    return _Sequence(list(prompt), int(max_tokens), matcher,
                     float(temperature) if math.isfinite(temperature) else 0.0, generator,
                     deadline, cancelled)
