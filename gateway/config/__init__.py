"""Gateway configuration: routes from a YAML file, validated, with `${VAR}` taken from the environment.

Any string value may name environment variables: `${AGENT_URL}` (an error if unset) or `${AGENT_URL:-default}`;
that is how secrets and URLs stay out of the file. A mistake is reported once, with the file, the line and the
key: `gateway.yaml:12: routes[0].upstream.dialect: Input should be 'ag-ui', 'ag-kit', ... or 'openai-responses';
did you mean 'ag-kit'?`.

```
model.py      what every section shares: unknown keys refused, a header name, a dialect's name
upstream.py   Upstream: where a route sends its runs (URL, dialect, headers, proxy, TLS)
route.py      Route: where clients call, and its timeouts, limits, keys, CORS, push, agent card
settings.py   GatewayConfig: the routes, the Store, and what holds for the whole gateway
loading.py    load_config / parse_config: the YAML file, `${VAR}`, and errors with their line
reference.py  the configuration reference (docs/reference/configuration.md), written from these models
```
"""

from gateway.config.loading import ConfigError, load_config, parse_config
from gateway.config.route import (
    NEVER_FORWARDED,
    AgentInfo,
    Auth,
    Cors,
    Limits,
    Push,
    Route,
    Skill,
    Timeouts,
    key_id,
    route_path,
)
from gateway.config.settings import GatewayConfig, Store
from gateway.config.upstream import RESERVED_UPSTREAM_HEADERS, Upstream, UpstreamTLS

__all__ = ["NEVER_FORWARDED", "RESERVED_UPSTREAM_HEADERS", "AgentInfo", "Auth", "ConfigError", "Cors", "GatewayConfig",
           "Limits", "Push", "Route", "Skill", "Store", "Timeouts", "Upstream", "UpstreamTLS", "key_id", "load_config",
           "parse_config", "route_path"]
