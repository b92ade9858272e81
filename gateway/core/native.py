"""`mypyc_attr`, for the classes of the optional compiled build (see `gateway.compiled`) that code outside it may
subclass, importable with or without mypy installed.

Compiled by mypyc, such a class needs `@mypyc_attr(allow_interpreted_subclasses=True)`, or a dialect written in
Python (`tests/toy_dialect`, or anyone's) could not subclass it. mypyc reads the decorator when it compiles; at run
time it does nothing, so a pure-Python install, which has no mypy and no `mypy_extensions`, gets a stand-in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import IdentityFunction

try:
    from mypy_extensions import mypyc_attr as mypyc_attr
except ImportError:

    def mypyc_attr(*attrs: str, **kwattrs: object) -> IdentityFunction:
        return lambda x: x
