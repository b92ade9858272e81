"""The optional compiled build. pyproject.toml holds everything else; a plain `pip install .` builds nothing here.

    AGENT_GATEWAY_COMPILE=1 pip install .    the per-event modules (`gateway.compiled.modules()`) compiled by mypyc

pip's isolated build first asks which build requirements there are: with the variable set, `setup_requires` names
mypy (which ships mypyc) and what mypy needs to type the compiled modules, pip installs them into the build
environment and runs this again, now to compile. Without the variable, the build requirements are pyproject.toml's
alone. In a checkout, `scripts/compile` builds the same extensions in place.
"""

from __future__ import annotations

import os
import runpy
import sys

from setuptools import Extension, setup

COMPILE = os.environ.get("AGENT_GATEWAY_COMPILE", "") not in ("", "0")
BUILD_REQUIRES = ["mypy>=2.4,<3", "orjson>=3.10", "pydantic>=2.7", "jsonpatch>=1.33"]
"""mypy 2.4.1 is the version the build is tested with; orjson and pydantic (and its mypy plugin) for the types, and
with jsonpatch for the registry, imported to find the modules (`gateway.compiled.modules`)."""


def extensions() -> list[Extension]:
    """The compiled modules as setuptools extensions (in one shared library, so calls between them stay in C), and
    the modules written in C (`gateway.compiled.NATIVE`)."""
    from mypyc.build import mypycify

    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)  # the registry, which says which dialects' decoders there are (`compiled.modules`)
    build = runpy.run_path(os.path.join(here, "gateway", "compiled.py"))
    compiled = mypycify([name.replace(".", "/") + ".py" for name in build["modules"]()], opt_level="3",
                        group_name="agent_gateway", target_dir=os.path.join("build", "mypyc"))
    native = [Extension(name, [name.replace(".", "/") + ".c"], extra_compile_args=["-O2"])
              for name in build["NATIVE"]]
    return [*compiled, *native]


if __name__ == "__main__":
    if not COMPILE:
        setup()
    else:
        try:
            import mypyc.build  # noqa: F401
        except ImportError:
            if sys.argv[-1] != "egg_info":  # not the build requirements being asked: a build that cannot compile
                raise SystemExit("AGENT_GATEWAY_COMPILE=1 needs mypy (which ships mypyc) where it builds: "
                                 + " ".join(BUILD_REQUIRES)) from None
            setup(setup_requires=BUILD_REQUIRES)  # pip asks for the build requirements: this names them and stops
        else:
            setup(ext_modules=extensions(), setup_requires=BUILD_REQUIRES)
