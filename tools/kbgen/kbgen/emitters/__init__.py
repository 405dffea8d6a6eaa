"""One module per target language.

Each module defines NAME (the target's name on the command line) and
emit(api) -> {path relative to the repository root: file content}.  Emitters
are discovered by listing this package, so adding a language adds a module
here and touches nothing else.
"""

import importlib
import pkgutil


def all_emitters():
    """The emitter modules, sorted by NAME."""
    mods = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(mod, "NAME") and hasattr(mod, "emit"):
            mods.append(mod)
    return sorted(mods, key=lambda m: m.NAME)
