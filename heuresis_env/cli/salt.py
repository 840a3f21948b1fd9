"""``heuresis salt``: print a strong test salt, or check ``$HEURESIS_TEST_SALT``."""

from __future__ import annotations

import argparse
import os

from heuresis_env.errors import HeuresisError
from heuresis_env.generation.salts import (
    HOW_TO_MAKE_ONE,
    TEST_SALT_ENV,
    check_salt,
    new_salt,
)

HELP = "print a fresh secret salt for sealing the test split (--check: check $HEURESIS_TEST_SALT)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--check", action="store_true",
                        help="check the salt in $HEURESIS_TEST_SALT instead of making one")


def run(args: argparse.Namespace) -> int:
    if not args.check:
        print(new_salt())
        return 0
    salt = os.environ.get(TEST_SALT_ENV)
    if not salt:
        raise HeuresisError(f"${TEST_SALT_ENV} is not set; {HOW_TO_MAKE_ONE}")
    check_salt(salt)
    print(f"${TEST_SALT_ENV} is strong enough to seal the test split (a random-looking "
          f"hexadecimal token of {len(salt)} characters: {4 * len(salt)} bits if it was "
          "drawn at random, as `heuresis salt` draws it)")
    return 0
