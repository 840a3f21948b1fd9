"""Seeds derived from hashes: the one place where a data hash or a name becomes randomness.

Every random draw in Heuresis comes from an explicit generator seeded here, so the same
instance (identified by its data's SHA-256) gives the same subsamples, bootstraps and
randomized tests on every machine, in every process, in any order of calls.
"""

from __future__ import annotations

import hashlib

import numpy as np

#: the largest seed accepted by libraries that take a 31-bit signed integer
MAX_INT31 = 2**31 - 1


def _hash_words(sha256: str, count: int = 4) -> list[int]:
    """The first ``count`` 32-bit words of a hex digest."""
    return [int(sha256[k:k + 8], 16) for k in range(0, 8 * count, 8)]


def instance_seed_sequence(sha256: str, *labels: str | int) -> np.random.SeedSequence:
    """A seed sequence for one named computation on one instance.

    The entropy is the first 128 bits of the instance's data hash followed by the labels (a
    string contributes its bytes, an integer itself), so two computations with different
    labels draw independent streams.
    """
    entropy: list[int] = _hash_words(sha256)
    for label in labels:
        entropy += list(label.encode()) if isinstance(label, str) else [int(label)]
    return np.random.SeedSequence(entropy)


def instance_rng(sha256: str, *labels: str | int) -> np.random.Generator:
    """A generator for one named computation on one instance (see :func:`instance_seed_sequence`)."""
    return np.random.default_rng(instance_seed_sequence(sha256, *labels))


def instance_seed(sha256: str) -> int:
    """A 64-bit integer seed of an instance: the first 64 bits of its data hash."""
    return int(sha256[:16], 16)


def int31_seed(sha256: str) -> int:
    """The instance seed reduced to a 31-bit integer, for libraries that take one."""
    return instance_seed(sha256) % MAX_INT31


def text_seed(text: str) -> int:
    """A 32-bit seed from a text (an episode id, a policy name): the same everywhere."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")
