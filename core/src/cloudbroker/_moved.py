"""Old import paths of the modules that moved into packages by concept (0.2.0).

``import cloudbroker.rclone`` still works, for one minor release, with a DeprecationWarning:
a finder on ``sys.meta_path`` answers an old name with the module at its new place (the same
module object, so patching either name patches both). A moved package's modules move with it.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not imported from typing: importing it costs more than this module
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import ModuleType

#: old module name -> where it lives now
MOVED: dict[str, str] = {
    "cloudbroker.answers": "cloudbroker.plugins.answers",
    "cloudbroker.availability": "cloudbroker.catalogs.availability",
    "cloudbroker.billing": "cloudbroker.plugins.billing",
    "cloudbroker.bounds": "cloudbroker.quote.bounds",
    "cloudbroker.catalog": "cloudbroker.catalogs.catalog",
    "cloudbroker.catalog_index": "cloudbroker.catalogs.catalog_index",
    "cloudbroker.catalog_refresh": "cloudbroker.catalogs.catalog_refresh",
    "cloudbroker.commitments": "cloudbroker.economics.commitments",
    "cloudbroker.context": "cloudbroker.plugins.context",
    "cloudbroker.costs": "cloudbroker.quote.costs",
    "cloudbroker.currency": "cloudbroker.money.currency",
    "cloudbroker.fast_quote": "cloudbroker.quote.fast_quote",
    "cloudbroker.geography": "cloudbroker.catalogs.geography",
    "cloudbroker.hookspecs": "cloudbroker.plugins.hookspecs",
    "cloudbroker.launching": "cloudbroker.plugins.launching",
    "cloudbroker.lease": "cloudbroker.broker.lease",
    "cloudbroker.limits": "cloudbroker.models.limits",
    "cloudbroker.listing": "cloudbroker.storage.listing",
    "cloudbroker.metrics.calls": "cloudbroker.plugins.calls",
    "cloudbroker.notify": "cloudbroker.broker.notify",
    "cloudbroker.objects": "cloudbroker.storage.objects",
    "cloudbroker.placements": "cloudbroker.models.placements",
    "cloudbroker.provider": "cloudbroker.plugins.provider",
    "cloudbroker.provider_data": "cloudbroker.catalogs.provider_data",
    "cloudbroker.rclone": "cloudbroker.storage.rclone",
    "cloudbroker.rclone_log": "cloudbroker.storage.rclone_log",
    "cloudbroker.rclone_session": "cloudbroker.storage.rclone_session",
    "cloudbroker.regions": "cloudbroker.catalogs.regions",
    "cloudbroker.report": "cloudbroker.economics.report",
    "cloudbroker.rest": "cloudbroker.plugins.rest",
    "cloudbroker.retry": "cloudbroker.plugins.retry",
    "cloudbroker.s3_remote": "cloudbroker.storage.s3_remote",
    "cloudbroker.scaffold": "cloudbroker.plugins.scaffold",
    "cloudbroker.sdk_errors": "cloudbroker.plugins.sdk_errors",
    "cloudbroker.spot_rank": "cloudbroker.quote.spot_rank",
    "cloudbroker.spot_risk": "cloudbroker.economics.spot_risk",
    "cloudbroker.tco": "cloudbroker.economics.tco",
    "cloudbroker.throughput": "cloudbroker.sizing.throughput",
    "cloudbroker.transfer": "cloudbroker.quote.transfer",
    "cloudbroker.vocabulary": "cloudbroker.models.vocabulary",
    "cloudbroker.zone_stock": "cloudbroker.catalogs.zone_stock",
}


class _Alias:
    """The loader of an old name: the module at its new place (importlib is imported only
    when an old name is asked for: ``import cloudbroker`` stays as light as it was)."""

    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        import importlib
        import warnings

        warnings.warn(
            f"{spec.name} moved to {self.new}; the old name goes in 0.3.0",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(self.new)
        self.spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module at its new place is already loaded. Importlib has set
        its ``__spec__`` to the old name's, though, which would hide a package's folder from
        ``importlib.resources``: it gets its own back."""
        module.__spec__ = self.spec


class _Finder:
    """On ``sys.meta_path``: answers the old names of :data:`MOVED`, nothing else."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        new = new_name(name)
        if new is None:
            return None
        from importlib.machinery import ModuleSpec

        return ModuleSpec(name, _Alias(new))  # type: ignore[arg-type]  # a loader by its methods


def new_name(name: str) -> str | None:
    """Where ``name`` lives now: a moved module, or a module inside a moved package
    (``cloudbroker.throughput.peaks`` is ``cloudbroker.sizing.throughput.peaks``)."""
    head, dot, tail = name, "", ""
    while head.startswith("cloudbroker."):
        if head in MOVED:
            return MOVED[head] + dot + tail
        head, _, last = head.rpartition(".")
        tail = f"{last}.{tail}" if dot else last
        dot = "."
    return None


def install() -> None:
    """Answer the old names (once a process), before the path finder: a module inside a moved
    package would otherwise be found again under its old name, a second module object."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
