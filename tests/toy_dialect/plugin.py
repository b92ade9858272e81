"""The registry line of the toy dialect, as a pytest plugin (`-p toy_dialect.plugin`): loaded before any test
module is collected, so every table that asks the registry sees the toy dialect."""

from adapters import registry

from . import DIALECT

registry.DIALECTS[DIALECT.name] = DIALECT
