"""How a route records its exchanges (`record:` in the configuration, `serve --record DIR`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class RecordOptions(BaseModel):
    """Each exchange of the route written to a file under `dir`: a file per conversation, or one log that rotates.
    Credentials are left out (see `gateway.recordings.exchange`); bodies are kept, as replaying needs them."""

    model_config = ConfigDict(extra="forbid")

    dir: str = Field(min_length=1, description="the folder the recordings go in (made if missing)")
    per: Literal["conversation", "log"] = Field("conversation", description="a file per conversation, or one "
                                                "log of every exchange that rotates at max_file_bytes")
    max_file_bytes: int = Field(16 * 1024 * 1024, gt=0, description="largest file; a conversation's exchanges "
                                "past it are not recorded, a log rotates")
    max_files: int = Field(1000, gt=0, description="files the route keeps; the oldest go first")


class JudgeOptions(BaseModel):
    """A share of the route's runs judged as they happen, by the rules `agent-gateway check` holds replies to: the
    upstream's reply by its dialect's, and what the gateway wrote by the client's (`gateway.recordings.judged`).
    A judged run is captured, up to `max_bytes`, and judged after its last byte has gone."""

    model_config = ConfigDict(extra="forbid")

    sample: float = Field(ge=0.0, le=1.0, description="the share of runs judged, from 0 (none) to 1 (every run)")
    max_bytes: int = Field(4 * 1024 * 1024, gt=0, description="largest run a judge keeps a copy of: a longer one is "
                           "not judged (its copy would cut a stream short and break rules it kept)")
