"""The inspector's settings (`inspector:` in the configuration, `serve --inspector`)."""

from __future__ import annotations

import ipaddress
import secrets
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


class InspectorOptions(BaseModel):
    """A page at `path` that shows the gateway's runs, reachable only with `key`. Without a key one is made when the
    gateway starts, and printed with the page's address; a gateway that listens beyond loopback refuses to start
    without a key set here."""

    model_config = ConfigDict(extra="forbid")

    key: str | None = Field(None, description="the inspector's own key (never a route's); made at startup when left "
                            "out, on a loopback listener only")
    path: str = Field("/_inspector", description="where the page is served")
    max_runs: int = Field(200, gt=0, le=100_000, description="runs kept, the oldest forgotten first")
    max_bytes: int = Field(64 * 1024 * 1024, gt=0, description="bytes the kept runs' captures may hold, the oldest "
                           "ended runs' freed first; a run past it shows what came before")
    capture: Literal["watched", "always"] = Field("watched", description="watched: the frames and events of runs "
                                                  "that start while the page is open (nothing per event otherwise); "
                                                  "always: of every run")

    @field_validator("key")
    @classmethod
    def _long_enough(cls, key: str | None) -> str | None:
        if key is not None and len(key.strip()) < 16:
            raise ValueError("the inspector's key must be at least 16 characters")
        return key.strip() if key is not None else None

    @field_validator("path")
    @classmethod
    def _a_path(cls, path: str) -> str:
        if not path.startswith("/") or path.rstrip("/") == "" or any(c in path for c in "?#{} "):
            raise ValueError("must be a path such as /_inspector")
        return path.rstrip("/")

    def key_for(self, host: str) -> str:
        """The key the page takes when the gateway listens on `host`; a `ValueError` saying what to do when it has
        none and the listener is not loopback only."""
        if self.key:
            return self.key
        if not is_loopback(host):
            raise ValueError(f"the inspector shows every request: on a listener beyond loopback ({host}) it needs "
                             "inspector.key set (a secret of 16 characters or more)")
        return secrets.token_urlsafe(24)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
