"""The ``local`` engine's configuration: it reads no settings of its own today.

Kept as a class like every engine's (``EngineSpec.config_path``), so that a setting added
later is read here, through ``model.config``, and not inside the engine's module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class LocalConfig:
    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LocalConfig:
        return cls()
