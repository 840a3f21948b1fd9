"""Isolation: how a process is confined, in one room of the foundation.

Two confined things use it: the code tool's sandbox (``heuresis_env.env.sandbox``) and the
evaluation's policy process (``heuresis_env.evaluation.policy_process``). Here are what the
machine provides and the sandbox's levels and mounts (:mod:`.detection`), the resource
limits (:mod:`.limits`), the kernel calls — namespaces, mounts, ``prctl``, capabilities,
seccomp — (:mod:`.linux`), the policy process's confinement and process-tree supervisor
(:mod:`.confinement`) and its launcher (:mod:`.launcher`), the proxy that lets a confined
process reach its declared endpoints only (:mod:`.endpoint_proxy`), and the one way a process
tree is read and ended (:mod:`.processes`). Standard library only (the launcher adds NumPy);
the modules below load nothing of the environment.

Declaring an endpoint a policy may reach: ``policy_endpoints(spec, options, declared)``
takes ``--policy-network HOST:PORT`` items (``declared``), a ``base_url`` option
(:data:`ENDPOINT_OPTIONS`), and for a registered API policy (:data:`API_ENDPOINTS`) the base
URLs in :data:`ENDPOINT_VARIABLES`; :func:`parse_endpoint` reads one.
"""

from heuresis_env.isolation.detection import (
    ISOLATION_CHOICES,
    LEVELS,
    IsolationUnavailableError,
    detect_isolation,
)
from heuresis_env.isolation.endpoint_proxy import (
    API_ENDPOINTS,
    ENDPOINT_OPTIONS,
    ENDPOINT_VARIABLES,
    EndpointProxy,
    parse_endpoint,
    policy_endpoints,
)
from heuresis_env.isolation.limits import MAX_CODE_BYTES, SandboxLimits, format_bytes
from heuresis_env.isolation.processes import (
    descendants,
    kill_descendants,
    kill_tree,
    kill_uid,
    signal_process,
    tree_resident_bytes,
)

__all__ = [
    "API_ENDPOINTS", "ENDPOINT_OPTIONS", "ENDPOINT_VARIABLES", "ISOLATION_CHOICES", "LEVELS",
    "MAX_CODE_BYTES", "EndpointProxy", "IsolationUnavailableError", "SandboxLimits",
    "descendants", "detect_isolation", "format_bytes", "kill_descendants", "kill_tree",
    "kill_uid", "parse_endpoint", "policy_endpoints", "signal_process", "tree_resident_bytes",
]
