"""Resource limits of one sandboxed call, with defaults that fit one agent turn."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import ClassVar

from heuresis_env.errors import HeuresisError

GIB = 1 << 30
MIB = 1 << 20
KIB = 1 << 10

#: the largest program accepted (bytes of UTF-8); longer code is an error result
MAX_CODE_BYTES = 1 * MIB


@dataclass(frozen=True)
class SandboxLimits:
    """Limits applied to every call.

    ``cpu_seconds`` and ``memory_bytes`` (address space) bind each process of the call
    (``RLIMIT_CPU``, ``RLIMIT_AS``); the resident memory of all of them together is also
    watched and the call stopped above ``memory_bytes``. ``max_processes`` counts threads
    too (``RLIMIT_NPROC``). ``output_bytes`` caps what is kept of stdout, of stderr and of
    the final value's repr (each); the rest is dropped with a marker. ``scratch_bytes`` is
    the size of the private scratch folder (also ``/tmp``), ``file_size_bytes`` the largest
    file the code may write.
    """

    cpu_seconds: float = 10.0
    wall_seconds: float = 15.0
    memory_bytes: int = 2 * GIB
    max_processes: int = 32
    file_size_bytes: int = 64 * MIB
    output_bytes: int = 32 * KIB
    open_files: int = 256
    scratch_bytes: int = 128 * MIB

    #: field → (smallest, largest) accepted value
    RANGES: ClassVar[dict[str, tuple[float, float]]] = {
        "cpu_seconds": (0.1, 24 * 3600.0),
        "wall_seconds": (0.1, 24 * 3600.0),
        "memory_bytes": (128 * MIB, 1 << 44),
        "max_processes": (1, 4096),
        "file_size_bytes": (1, 1 << 40),
        "output_bytes": (64, 1 << 30),
        "open_files": (16, 65536),
        "scratch_bytes": (MIB, 1 << 40),
    }

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            low, high = self.RANGES[field.name]
            integral = field.type == "int"
            kind = int if integral else (int, float)
            if isinstance(value, bool) or not isinstance(value, kind):
                wanted = "an integer" if integral else "a number"
                raise HeuresisError(
                    f"SandboxLimits.{field.name} must be {wanted} in [{low:g}, {high:g}], "
                    f"got {value!r}"
                )
            if not low <= value <= high:
                raise HeuresisError(
                    f"SandboxLimits.{field.name} = {value!r} is out of range; "
                    f"it must lie in [{low:g}, {high:g}]"
                )

    def to_dict(self) -> dict:
        return asdict(self)


def format_bytes(count: float) -> str:
    """A byte count for people: ``2 GiB``, ``32 KiB``, ``400 MiB``."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if count < 1024 or unit == "TiB":
            return f"{count:g} {unit}" if unit == "bytes" else f"{count:.4g} {unit}"
        count /= 1024
    return f"{count:g} bytes"
