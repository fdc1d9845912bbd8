"""Building blocks for provider plugins, shared by all so that no provider copies another.

A provider declares one :class:`Description` and exposes an instance of
:class:`CatalogProvider` (or a subclass adding live hooks) as its entry point object::

    class AwsProvider(CatalogProvider):
        @hookimpl
        def launch(self, ctx, request): ...

    plugin = AwsProvider(DESCRIPTION)

``CatalogProvider`` answers ``provider_info``, ``list_instance_types`` and ``price`` from the
offline catalog packaged in the provider's distribution, preferring a user catalog written
by ``cloudbroker catalog refresh`` when one exists.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import date
from typing import ClassVar, Protocol

from cloudbroker.catalogs.catalog import Catalog, load_catalog, packaged
from cloudbroker.models import (
    Availability,
    Bill,
    BucketRef,
    CredentialStatus,
    Instance,
    InstanceRef,
    InstanceType,
    LaunchRequest,
    Market,
    PriceSheet,
    ProviderInfo,
    Quota,
    StorageRemote,
)
from cloudbroker.plugins.context import HookContext
from cloudbroker.plugins.hookspecs import hookimpl
from cloudbroker.plugins.paths import api_endpoint, credential_source, user_catalog_dir

__all__ = [
    "CatalogProvider",
    "Description",
    "api_endpoint",
    "user_catalog_dir",
]


@dataclass(frozen=True)
class Description:
    name: str
    title: str
    currency: str
    credential_env: tuple[str, ...]
    credential_files: tuple[str, ...]
    credential_hint: str
    package: str
    homepage: str | None = None
    #: Variables that point the provider's API somewhere else (an emulator, a proxy);
    #: default ``CLOUDBROKER_<NAME>_ENDPOINT``. See :func:`user_catalog_dir`.
    endpoint_env: tuple[str, ...] = ()
    #: Object storage's own keys, for a cloud whose storage does not take the compute
    #: credentials; empty: ``credential_env`` serves both.
    storage_credential_env: tuple[str, ...] = ()
    storage_credential_hint: str = ""

    def storage_credentials(self, ctx: HookContext) -> CredentialStatus | None:
        """Like :meth:`credentials`, for the storage keys; None when there are none apart."""
        if not self.storage_credential_env:
            return None
        source = credential_source(ctx.env, self.storage_credential_env, ())
        if source is not None:
            return CredentialStatus(configured=True, source=source)
        hint = self.storage_credential_hint or f"set {' and '.join(self.storage_credential_env)}"
        return CredentialStatus(configured=False, hint=hint)

    def credentials(self, ctx: HookContext) -> CredentialStatus:
        """Where credentials would come from, checked without reading or logging any value."""
        source = credential_source(ctx.env, self.credential_env, self.credential_files)
        if source is not None:
            return CredentialStatus(configured=True, source=source)
        return CredentialStatus(configured=False, hint=self.credential_hint)

    def info(
        self, ctx: HookContext, *, regions: tuple[str, ...] = (), as_of: date | None = None
    ) -> ProviderInfo:
        return ProviderInfo(
            name=self.name,
            title=self.title,
            currency=self.currency,
            regions=regions,
            credentials=self.credentials(ctx),
            storage_credentials=self.storage_credentials(ctx),
            catalog_as_of=as_of,
            homepage=self.homepage,
        )


class CatalogProvider:
    """Offline hooks served from the packaged (or user-refreshed) catalog."""

    def __init__(self, description: Description) -> None:
        self.description = description
        self._loaded: tuple[object, Catalog] | None = None
        # the fan-out asks list_instance_types and price at once: load (and warn) once
        self._loading = threading.Lock()

    @property
    def catalog(self) -> Catalog:
        """The refreshed catalog when there is one, else the packaged one.

        Cached, but keyed by the refreshed files' path and mtime, so a long-lived process (an
        embedder, the in-process test runner) sees a ``catalog refresh`` or another data dir.
        """
        name, names = self.description.name, self.description.endpoint_env
        refreshed = user_catalog_dir(name, api_endpoint(name, names))
        files = (refreshed / "catalog.csv", refreshed / "terms.toml")
        stamp = tuple((str(f), f.stat().st_mtime_ns) for f in files if f.is_file())
        with self._loading:
            if self._loaded is None or self._loaded[0] != stamp:
                if len(stamp) == len(files):
                    catalog = load_catalog(self.description.name, refreshed)
                else:
                    catalog = packaged(self.description.name, self.description.package)
                self._loaded = (stamp, catalog)
            return self._loaded[1]

    @hookimpl
    def provider_info(self, ctx: HookContext) -> ProviderInfo:
        catalog = self.catalog
        return self.description.info(ctx, regions=catalog.regions, as_of=catalog.as_of)

    @hookimpl
    def list_instance_types(
        self, ctx: HookContext, regions: list[str] | None
    ) -> list[InstanceType]:
        live = None if ctx.offline else self.live_instance_types(ctx, regions)
        return self.catalog.types_in(regions) if live is None else live

    @hookimpl
    def price(self, ctx: HookContext, regions: list[str] | None) -> PriceSheet:
        live = None if ctx.offline else self.live_price(ctx, regions)
        return self.catalog.price_sheet(regions) if live is None else live

    # Online (ctx.offline False) the hooks above ask these first; a subclass overrides them
    # to call its cloud's API. None, the default, means "no live source: use the catalog".

    def live_instance_types(
        self, ctx: HookContext, regions: list[str] | None
    ) -> list[InstanceType] | None:
        return None

    def live_price(self, ctx: HookContext, regions: list[str] | None) -> PriceSheet | None:
        return None


# -- a provider made of its package's modules ----------------------------------------------
# What each module of a provider package offers (its functions, by name): the four built-in
# providers have one module per concept, and a plugin built on :class:`ModularProvider`
# names them instead of writing a delegating hook for each.


class OffersModule(Protocol):
    def instance_types(self, ctx: HookContext, regions: list[str] | None) -> list[InstanceType]: ...
    def price_sheet(
        self, ctx: HookContext, regions: list[str] | None, catalog: Catalog
    ) -> PriceSheet: ...
    def availability(
        self, ctx: HookContext, regions: list[str], instance_types: list[str], market: Market
    ) -> list[Availability]: ...


class InstancesModule(Protocol):
    def tagged(
        self, ctx: HookContext, regions: list[str] | None, tags: dict[str, str]
    ) -> list[Instance]: ...
    def launch(self, ctx: HookContext, request: LaunchRequest) -> Instance: ...
    def terminate(self, ctx: HookContext, instance: InstanceRef) -> Instance: ...
    def status(self, ctx: HookContext, instance: InstanceRef) -> Instance: ...


class QuotasModule(Protocol):
    def quotas(
        self, ctx: HookContext, regions: list[str], instance_types: list[str], market: Market
    ) -> list[Quota]: ...


class BillingModule(Protocol):
    def billed(
        self, ctx: HookContext, instances: list[InstanceRef], start: float, end: float
    ) -> list[Bill]: ...


class StorageModule(Protocol):
    def remote(self, ctx: HookContext, bucket: BucketRef) -> StorageRemote: ...


@dataclass(frozen=True)
class Modules:
    """A provider package's modules the hooks delegate to (each imports its SDK lazily)."""

    offers: OffersModule
    instances: InstancesModule
    quotas: QuotasModule
    billing: BillingModule
    storage: StorageModule


class ModularProvider(CatalogProvider):
    """A catalog provider whose live hooks are its :class:`Modules`' functions: live types
    and prices, instances, availability, quotas, bills and storage. A plugin states only
    what differs (its description, its modules, a hook of its own such as ``spot_notice``).
    """

    modules: ClassVar[Modules]  # set by each subclass: its package's modules

    def live_instance_types(
        self, ctx: HookContext, regions: list[str] | None
    ) -> list[InstanceType]:
        return self.modules.offers.instance_types(ctx, regions)

    def live_price(self, ctx: HookContext, regions: list[str] | None) -> PriceSheet:
        return self.modules.offers.price_sheet(ctx, regions, self.catalog)

    @hookimpl
    def list_instances(
        self, ctx: HookContext, regions: list[str] | None, tags: dict[str, str]
    ) -> list[Instance]:
        return self.modules.instances.tagged(ctx, regions, tags)

    @hookimpl
    def availability(
        self, ctx: HookContext, regions: list[str], instance_types: list[str], market: Market
    ) -> list[Availability]:
        return self.modules.offers.availability(ctx, regions, instance_types, market)

    @hookimpl
    def quotas(
        self, ctx: HookContext, regions: list[str], instance_types: list[str], market: Market
    ) -> list[Quota]:
        return self.modules.quotas.quotas(ctx, regions, instance_types, market)

    @hookimpl
    def billed(
        self, ctx: HookContext, instances: list[InstanceRef], start: float, end: float
    ) -> list[Bill]:
        return self.modules.billing.billed(ctx, instances, start, end)

    @hookimpl
    def launch(self, ctx: HookContext, request: LaunchRequest) -> Instance:
        return self.modules.instances.launch(ctx, request)

    @hookimpl
    def terminate(self, ctx: HookContext, instance: InstanceRef) -> Instance:
        return self.modules.instances.terminate(ctx, instance)

    @hookimpl
    def instance_status(self, ctx: HookContext, instance: InstanceRef) -> Instance:
        return self.modules.instances.status(ctx, instance)

    @hookimpl
    def sync_storage(self, ctx: HookContext, bucket: BucketRef) -> StorageRemote:
        return self.modules.storage.remote(ctx, bucket)
