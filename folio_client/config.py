"""Where the client finds its server and key: arguments first, then the environment
(``FOLIO_URL``, ``FOLIO_API_KEY``), then a small TOML file.

The file is ``$FOLIO_CONFIG`` if set, else ``$XDG_CONFIG_HOME/folio/config.toml`` (by default
``~/.config/folio/config.toml``)::

    url = "https://ocr.example.org"
    api_key = "folio_..."
"""

from __future__ import annotations

import logging
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from folio_client.errors import ConfigError

logger = logging.getLogger(__name__)

DEFAULT_URL = "http://127.0.0.1:8000"


@dataclass(frozen=True)
class Settings:
    url: str
    api_key: str | None
    source: str  # where the URL came from, for messages: "argument", "FOLIO_URL", a path
    key_source: str = ""  # where the key came from, the same way ("" when there is none)
    config_file: Path | None = None  # the configuration file looked at


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    if environ.get("FOLIO_CONFIG"):
        return Path(environ["FOLIO_CONFIG"]).expanduser()
    base = environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base).expanduser() / "folio" / "config.toml"


def read_config_file(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read the configuration file {path}: {exc}") from exc
    unknown = sorted(set(data) - {"url", "api_key"})
    if unknown:
        logger.warning("%s: ignoring unknown keys %s", path, ", ".join(unknown))
    for key in ("url", "api_key"):
        if key in data and not isinstance(data[key], str):
            raise ConfigError(f"{path}: `{key}` must be a string")
    return {key: data[key] for key in ("url", "api_key") if key in data}


def resolve(
    url: str | None = None,
    api_key: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Each value from the first place that has it; the URL falls back to a local server."""
    environ = os.environ if environ is None else environ
    path = config_path(environ)
    # The file is read only when an argument or variable is missing, so that a broken file
    # does not stop a command that names everything.
    need_file = not (url or environ.get("FOLIO_URL")) or not (
        api_key or environ.get("FOLIO_API_KEY")
    )
    from_file = read_config_file(path) if need_file else {}
    chosen_url, source = DEFAULT_URL, "default"
    for value, where in (
        (url, "argument"),
        (environ.get("FOLIO_URL"), "FOLIO_URL"),
        (from_file.get("url"), str(path)),
    ):
        if value:
            chosen_url, source = value, where
            break
    key, key_source = None, ""
    for value, where in (
        (api_key, "argument"),
        (environ.get("FOLIO_API_KEY"), "FOLIO_API_KEY"),
        (from_file.get("api_key"), str(path)),
    ):
        if value:
            key, key_source = value, where
            break
    if not chosen_url.startswith(("http://", "https://")):
        raise ConfigError(
            f"the server URL {chosen_url!r} (from {source}) must start with http(s)://"
        )
    return Settings(
        url=chosen_url.rstrip("/"),
        api_key=key,
        source=source,
        key_source=key_source,
        config_file=path,
    )
