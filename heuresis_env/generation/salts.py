"""The test salt: the one place that makes, checks, digests and uses it as a key.

A salt seals the test split (spec, section 1): with it the same code yields a test set no one
without it can regenerate. It must be a secret of at least 128 bits — a weaker one can be
guessed offline from anything keyed by it — so every entry point (``heuresis evaluate``, the
MCP server, ``report``, the Inspect task, the amortized evaluation) takes it through
:func:`sealing_salt` or :func:`check_salt`, which refuse a weak salt with a message that shows
how to make a strong one (``heuresis salt``).

A run records only :func:`salt_digest`: a *slow* keyed digest (scrypt, about 30 MiB and tens
of milliseconds per guess) rather than a plain SHA-256, so even a guess list costs real time
per entry. A sealed run's config and results carry an HMAC (:func:`seal`) keyed by the salt:
a changed score or config cannot be re-sealed without it.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import secrets
from typing import Any

from heuresis_env.cache import stable_hash
from heuresis_env.errors import HeuresisError

#: Environment variable holding the secret salt that seals the test split.
TEST_SALT_ENV = "HEURESIS_TEST_SALT"
#: the least entropy a test salt must carry, in bits
MIN_SALT_BITS = 128
#: scrypt's cost (N = 2**15, r = 8: 32 MiB of memory a guess); a digest names its parameters
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**15, 8, 1
_DIGEST_PREFIX = "scrypt"
_HEX = frozenset("0123456789abcdefABCDEF")
HOW_TO_MAKE_ONE = ("make one with `heuresis salt` and export it, e.g. "
                   f"export {TEST_SALT_ENV}=$(heuresis salt)")


def new_salt() -> str:
    """A fresh strong salt: 256 random bits as 64 hexadecimal characters."""
    return secrets.token_hex(32)


def _period(text: str) -> int:
    """The length of the shortest block whose repetition (twice at least) gives ``text``; a
    random text's last characters matching its first ones is no repetition."""
    for p in range(1, len(text) // 2 + 1):
        if all(text[i] == text[i % p] for i in range(p, len(text))):
            return p
    return len(text)


def salt_bits(salt: str) -> int:
    """An upper estimate of the randomness in ``salt``, in bits: the bits a random character
    of its alphabet carries (4 for hexadecimal, 6 else) times the length of its shortest
    repeating block; a salt of fewer than 8 distinct characters counts 0."""
    if len(set(salt)) < min(8, len(salt)):
        return 0
    per_character = 4 if set(salt) <= _HEX else 6
    return per_character * _period(salt)


def check_salt(salt: Any) -> str:
    """Refuse a salt too short or too regular to seal a split; returns the salt."""
    if not isinstance(salt, str) or not salt:
        raise HeuresisError(f"a test salt must be a non-empty string, got "
                            f"{type(salt).__name__}; {HOW_TO_MAKE_ONE}")
    bits = salt_bits(salt)
    if bits < MIN_SALT_BITS:
        per_character = 4 if set(salt) <= _HEX else 6
        need = -(-MIN_SALT_BITS // per_character)
        raise HeuresisError(
            f"the test salt (${TEST_SALT_ENV}) is too weak to seal the test split: its "
            f"{len(salt)} characters carry at most {bits} bits of randomness and a salt "
            f"needs {MIN_SALT_BITS} (at least {need} random "
            f"{'hexadecimal' if per_character == 4 else 'base64'} characters); "
            f"{HOW_TO_MAKE_ONE}")
    return salt


def sealing_salt(split: str = "test", salt: str | None = None) -> str | None:
    """The salt that seals ``split``: ``salt`` or ``$HEURESIS_TEST_SALT`` for test (checked
    strong enough), None for any other split or when none is set."""
    if split != "test":
        return None
    if salt is None:
        salt = os.environ.get(TEST_SALT_ENV) or None
    return None if not salt else check_salt(salt)


@functools.lru_cache(maxsize=8)
def salt_digest(salt: str | None) -> str | None:
    """The digest a run records of its salt (never the salt): scrypt, keyed by a fixed
    domain string, written ``scrypt$N$r$p$<hex>``. Deterministic, so two runs with one salt
    record the same digest."""
    if not salt:
        return None
    key = hashlib.scrypt(salt.encode(), salt=b"heuresis-test-salt-digest", n=SCRYPT_N,
                         r=SCRYPT_R, p=SCRYPT_P, maxmem=2**26, dklen=32)
    return f"{_DIGEST_PREFIX}${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${key.hex()}"


def digest_matches(salt: str, digest: str) -> bool:
    """Whether ``digest`` (a run's recorded ``salt_digest``) is the digest of ``salt``. Runs
    written before the scrypt digest recorded a plain SHA-256; those are still read."""
    if not isinstance(digest, str):
        return False
    if digest.startswith(_DIGEST_PREFIX + "$"):
        expected = salt_digest(salt) or ""
    else:
        expected = hashlib.sha256(salt.encode()).hexdigest()
    return hmac.compare_digest(expected, digest)


def spec_digest(spec: Any) -> str:
    """A short name for a spec (a policy's spec and options): the first 16 hex digits of its
    stable SHA-256, used to give each policy its own folder."""
    return stable_hash(spec)[:16]


def seal(salt: str, *parts: bytes) -> str:
    """HMAC-SHA256 over ``parts`` (each length-prefixed), keyed by the salt."""
    key = hashlib.sha256(b"heuresis-run-seal:" + salt.encode()).digest()
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for part in parts:
        mac.update(len(part).to_bytes(8, "big"))
        mac.update(part)
    return mac.hexdigest()


def seal_matches(salt: str, recorded: str, *parts: bytes) -> bool:
    return isinstance(recorded, str) and hmac.compare_digest(seal(salt, *parts), recorded)


__all__ = ["HOW_TO_MAKE_ONE", "MIN_SALT_BITS", "TEST_SALT_ENV", "check_salt", "digest_matches",
           "new_salt", "salt_bits", "salt_digest", "seal", "seal_matches", "sealing_salt",
           "spec_digest"]
