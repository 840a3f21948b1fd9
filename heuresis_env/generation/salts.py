"""The test salt: the one place that makes, checks, digests and uses it as a key.

A salt seals the test split (spec, section 1): with it the same code yields a test set no one
without it can regenerate. It must be a secret of at least 128 bits — a weaker one can be
guessed offline from anything keyed by it — so it exists past an entry point only as one
checked value, :class:`SealedSalt`, made by :func:`sealing_salt` (``salt=...`` or
``$HEURESIS_TEST_SALT``, the test split only): the environment, the question sets, instance
generation, ``heuresis evaluate``, the MCP server, ``report``, the Inspect task and the
amortized dataset all take it there, so a weak salt is refused the same way everywhere, with
a message that shows how to make a strong one (``heuresis salt``). The value carries what is
derived from the secret — the digest a run records, the seed entropy of sealed instances, the
stand-in a Gymnasium spec shows, the key of in-memory caches — and never shows the secret in
its ``repr``.

A run records only :func:`salt_digest`: a *slow* keyed digest (scrypt, about 30 MiB and tens
of milliseconds per guess) rather than a plain SHA-256, so even a guess list costs real time
per entry. A sealed run's config and results carry an HMAC (:func:`seal`) keyed by the salt:
a changed score or config cannot be re-sealed without it.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import math
import os
import secrets
from dataclasses import dataclass, field
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
#: the lengths a salt may have, in hexadecimal characters (128 to 512 random bits)
MIN_HEX_CHARACTERS, MAX_HEX_CHARACTERS = MIN_SALT_BITS // 4, 128
#: a random token shows none of :func:`salt_pattern`'s patterns but with about this chance
PATTERN_P = 1e-6
#: a run this long (one character, or counting) is a pattern: chance ≈ 64 · 16⁻⁷ ≈ 2e-7
MAX_RUN = 8
HOW_TO_MAKE_ONE = ("make one with `heuresis salt` and export it, e.g. "
                   f"export {TEST_SALT_ENV}=$(heuresis salt)")


def new_salt() -> str:
    """A fresh strong salt: 256 random bits as 64 hexadecimal characters, drawn again in the
    rare case (a few in a million) that a random token shows one of the patterns
    :func:`salt_pattern` refuses — so what ``heuresis salt`` prints is always accepted."""
    while True:
        salt = secrets.token_hex(32)
        if salt_pattern(salt) is None:
            return salt


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


def _binomial_tail(n: int, k: int, p: float) -> float:
    """P(X ≤ k) for X ~ Binomial(n, p)."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


def _longest_run(salt: str, step: int) -> int:
    """The longest stretch whose consecutive characters differ by ``step`` in hexadecimal
    value (0: one character repeated; ±1: counting up or down)."""
    values = [int(c, 16) for c in salt]
    longest = current = 1
    for a, b in zip(values, values[1:], strict=False):
        current = current + 1 if (b - a) % 16 == step % 16 else 1
        longest = max(longest, current)
    return longest


def salt_pattern(salt: str) -> str | None:
    """What makes ``salt`` look made by hand rather than drawn at random, or None.

    A salt is a random token: :data:`MIN_HEX_CHARACTERS` to :data:`MAX_HEX_CHARACTERS`
    hexadecimal characters in one case (what `heuresis salt` prints: 64). Words, dates,
    dashes and phrases are not hexadecimal; hexadecimal made by hand is caught by what a
    random token shows with a probability below :data:`PATTERN_P` each — a repeated block,
    too few or too many digits for its length (``deadbeefcafe…``, ``20240501…``), one
    character run :data:`MAX_RUN` times or more, or counting up or down as long."""
    if not MIN_HEX_CHARACTERS <= len(salt) <= MAX_HEX_CHARACTERS:
        return (f"it has {len(salt)} characters, and a salt is {MIN_HEX_CHARACTERS} to "
                f"{MAX_HEX_CHARACTERS} random hexadecimal characters")
    if not set(salt) <= _HEX:
        return "it is not hexadecimal (words, dates, dashes and phrases are guessable)"
    if salt != salt.lower() and salt != salt.upper():
        return "it mixes upper- and lower-case hexadecimal digits"
    if _period(salt) < len(salt):
        return f"it repeats a block of {_period(salt)} characters"
    digits = sum(c.isdigit() for c in salt)
    if (_binomial_tail(len(salt), digits, 10 / 16) < PATTERN_P
            or _binomial_tail(len(salt), len(salt) - digits, 6 / 16) < PATTERN_P):
        return (f"{digits} of its {len(salt)} characters are digits (a random token has about "
                f"{round(len(salt) * 10 / 16)}): it reads as hexadecimal words or a number")
    for step, what in ((0, "repeats one character"), (1, "counts up"), (-1, "counts down")):
        if _longest_run(salt, step) >= MAX_RUN:
            return f"it {what} {_longest_run(salt, step)} times in a row"
    return None


def check_salt(salt: Any) -> str:
    """Refuse a salt that is not a random token (:func:`salt_pattern`); returns the salt. The
    message never shows the salt."""
    if not isinstance(salt, str) or not salt:
        raise HeuresisError(f"a test salt must be a non-empty string, got "
                            f"{type(salt).__name__}; {HOW_TO_MAKE_ONE}")
    problem = salt_pattern(salt)
    if problem is not None:
        raise HeuresisError(
            f"the test salt (${TEST_SALT_ENV}) is too weak to seal the test split: {problem}; "
            f"a salt must be a random token of at least {MIN_SALT_BITS} bits. "
            f"{HOW_TO_MAKE_ONE}")
    return salt


#: what a Gymnasium spec's ``kwargs["salt"]`` holds instead of a test salt: this prefix and the
#: hexadecimal part of the salt's slow digest, so a spec can be printed, saved and shared
SEALED_SALT_PREFIX = "sealed-test-salt-scrypt:"


@dataclass(frozen=True)
class SealedSalt:
    """A test salt, checked strong enough once, with everything derived from it.

    Made by :func:`sealing_salt` (or directly from a string, which is checked); ``repr`` shows
    its digest's first digits, never the secret. Equal salts are equal values; a value
    pickles to its secret and is checked again when unpickled.
    """

    secret: str = field(repr=False)

    def __post_init__(self) -> None:
        check_salt(self.secret)

    def __repr__(self) -> str:
        return f"SealedSalt({self.memo_key[:8]}…)"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (SealedSalt, (self.secret,))  # checked again where it is unpickled

    @functools.cached_property
    def digest(self) -> str:
        """The digest a run records (:func:`salt_digest`: scrypt, slow per guess)."""
        return _scrypt_digest(self.secret)

    @functools.cached_property
    def marker(self) -> str:
        """The stand-in a Gymnasium spec shows for the salt (:func:`salt_marker`)."""
        return salt_marker(self)

    @functools.cached_property
    def entropy(self) -> tuple[int, ...]:
        """The eight 32-bit words a sealed split's seeds add to their key's words."""
        words = hashlib.sha256(f"heuresis-test-salt:{self.secret}".encode()).hexdigest()
        return tuple(int(words[i : i + 8], 16) for i in range(0, 64, 8))

    @functools.cached_property
    def memo_key(self) -> str:
        """A fast digest naming the salt in this process's memory caches (never written)."""
        return hashlib.sha256(self.secret.encode()).hexdigest()

    def seal(self, *parts: bytes) -> str:
        """HMAC-SHA256 over ``parts`` keyed by the salt (:func:`seal`)."""
        return seal(self.secret, *parts)

    def seal_matches(self, recorded: Any, *parts: bytes) -> bool:
        return seal_matches(self.secret, recorded, *parts)

    def matches(self, digest: Any) -> bool:
        """Whether ``digest`` (a run's recorded ``salt_digest``) is this salt's."""
        return digest_matches(self.secret, digest)


#: what an entry point takes as a salt: a checked value, a string to check, or None for
#: ``$HEURESIS_TEST_SALT`` ("" for none: the public split)
SaltArgument = SealedSalt | str | None


def sealing_salt(split: str = "test", salt: SaltArgument = None) -> SealedSalt | None:
    """The salt that seals ``split``, checked: ``salt`` or ``$HEURESIS_TEST_SALT`` for test,
    None for any other split, when none is set, or for ``salt=""`` (explicitly public). A
    spec's stand-in (:attr:`SealedSalt.marker`) stands for ``$HEURESIS_TEST_SALT`` when their
    digests match. Every entry point takes the salt here; an error never shows a salt."""
    if salt is not None and not isinstance(salt, str | SealedSalt):
        raise HeuresisError(f"salt must be a string or None, got a {type(salt).__name__}")
    if split != "test":
        return None
    if isinstance(salt, SealedSalt):
        return salt
    if salt is None:
        salt = os.environ.get(TEST_SALT_ENV) or None
    elif salt.startswith(SEALED_SALT_PREFIX):
        secret = sealing_salt(split, os.environ.get(TEST_SALT_ENV) or "")
        if secret is None or secret.marker != salt:
            raise HeuresisError(
                "this environment's spec stands for a sealed test split; set "
                f"${TEST_SALT_ENV} to the salt it was made with (its digest is "
                f"{salt[len(SEALED_SALT_PREFIX):][:16]}…) or pass salt=...")
        return secret
    return SealedSalt(salt) if salt else None


def salt_digest(salt: SealedSalt | str | None) -> str | None:
    """The digest a run records of its salt (never the salt): scrypt, keyed by a fixed
    domain string, written ``scrypt$N$r$p$<hex>``. Deterministic, so two runs with one salt
    record the same digest."""
    if isinstance(salt, SealedSalt):
        return salt.digest
    return _scrypt_digest(salt) if salt else None


@functools.lru_cache(maxsize=8)
def _scrypt_digest(salt: str) -> str:
    key = hashlib.scrypt(salt.encode(), salt=b"heuresis-test-salt-digest", n=SCRYPT_N,
                         r=SCRYPT_R, p=SCRYPT_P, maxmem=2**26, dklen=32)
    return f"{_DIGEST_PREFIX}${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${key.hex()}"


def salt_marker(salt: SealedSalt | str) -> str:
    """The stand-in a Gymnasium spec shows instead of ``salt`` (any salt given, even one a
    public split ignores, is hidden): :data:`SEALED_SALT_PREFIX` and its digest's digits."""
    return SEALED_SALT_PREFIX + str(salt_digest(salt)).rsplit("$", 1)[-1]


def digest_matches(salt: SealedSalt | str, digest: Any) -> bool:
    """Whether ``digest`` (a run's recorded ``salt_digest``) is the digest of ``salt``. Runs
    written before the scrypt digest recorded a plain SHA-256; those are still read."""
    if not isinstance(digest, str):
        return False
    if isinstance(salt, SealedSalt):
        salt = salt.secret
    if digest.startswith(_DIGEST_PREFIX + "$"):
        expected = salt_digest(salt) or ""
    else:
        expected = hashlib.sha256(salt.encode()).hexdigest()
    return hmac.compare_digest(expected, digest)


def spec_digest(spec: Any) -> str:
    """A short name for a spec (a policy's spec and options): the first 16 hex digits of its
    stable SHA-256, used to give each policy its own folder."""
    return stable_hash(spec)[:16]


def seal(salt: SealedSalt | str, *parts: bytes) -> str:
    """HMAC-SHA256 over ``parts`` (each length-prefixed), keyed by the salt."""
    if isinstance(salt, SealedSalt):
        salt = salt.secret
    key = hashlib.sha256(b"heuresis-run-seal:" + salt.encode()).digest()
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for part in parts:
        mac.update(len(part).to_bytes(8, "big"))
        mac.update(part)
    return mac.hexdigest()


def seal_matches(salt: SealedSalt | str, recorded: Any, *parts: bytes) -> bool:
    return isinstance(recorded, str) and hmac.compare_digest(seal(salt, *parts), recorded)


__all__ = ["HOW_TO_MAKE_ONE", "MIN_SALT_BITS", "SEALED_SALT_PREFIX", "TEST_SALT_ENV",
           "SaltArgument", "SealedSalt", "check_salt", "digest_matches",
           "new_salt", "salt_bits", "salt_digest", "salt_marker", "seal", "seal_matches", "sealing_salt",
           "spec_digest"]
