"""Conditional-independence tests behind one interface (:class:`CITest`).

PC, the environment's ``ci_test`` tool and the routers all call tests through
:func:`make_ci_test`; the registry maps a name to a class, imported only when first used
(KCI's dependencies and ``dcor``'s numba start-up are heavy).
"""

from heuresis_env.discovery.citests.base import (
    CI_TESTS,
    CIResult,
    CITest,
    available_ci_tests,
    make_ci_test,
    register_ci_test,
)

__all__ = [
    "CI_TESTS",
    "CIResult",
    "CITest",
    "available_ci_tests",
    "make_ci_test",
    "register_ci_test",
]
