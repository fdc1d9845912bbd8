"""The provider contract: every hook a cloud plugin may implement.

This module is the plugin reference (``docs/plugins.md`` is checked against it). A provider is
a module or object registered under the entry-point group ``cloudbroker.providers``; the entry
point's name is the provider's name (``aws``, ``aliyun``, ...), and every name a hook returns
(``ProviderInfo.name``, ``provider`` fields) must equal it: an answer under another name is
reported as the plugin's failure. Implement hooks with::

    from cloudbroker.plugins.hookspecs import hookimpl

    @hookimpl
    def provider_info(ctx): ...

Two kinds of hook:

* **fan-out** (:func:`provider_info`, :func:`list_instance_types`, :func:`price`,
  :func:`list_instances`, :func:`availability`, :func:`billed`, :func:`quotas`,
  :func:`spot_notice`; :data:`FAN_OUT_HOOKS`): the core calls every provider's
  implementation concurrently, one thread each, with a timeout per provider. A provider that
  raises, times out or returns data that does not validate is reported by name and left out;
  the others still answer.
* **routed** (:func:`launch`, :func:`terminate`, :func:`instance_status`,
  :func:`sync_storage`; :data:`ROUTED_HOOKS`): the core calls only the provider that owns the
  instance or bucket.
  These hooks are never broadcast, so an implementation cannot launch on the wrong cloud
  by forgetting an "is this mine?" check.

Every hook receives ``ctx`` (:class:`cloudbroker.plugins.context.HookContext`): the provider's
settings, the environment to read credentials from, a logger and the call's timeout. Errors
must be raised as :mod:`cloudbroker.errors` types (AuthError, CapacityError, NotFoundError,
ThrottledError, ProviderUnavailable, ConfigError); anything else is reported as a plugin bug.
Importing a plugin module must not import its cloud SDK: import it inside the hook that
needs it. Besides the hooks, a provider may ship data files (commitment terms, spot
interruption rates) where :mod:`cloudbroker.catalogs.provider_data` says the core reads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, get_args

import pluggy

if TYPE_CHECKING:
    from cloudbroker.models import (
        Availability,
        Bill,
        BucketRef,
        Instance,
        InstanceRef,
        InstanceType,
        LaunchRequest,
        Market,
        PriceSheet,
        ProviderInfo,
        Quota,
        SpotNotice,
        StorageRemote,
    )
    from cloudbroker.plugins.context import HookContext

PROJECT = "cloudbroker"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

# Each hook's kind, once: the type the manager's calls are checked against, and the tuples
# the registry and the manager test names against (the contract of each: its docstring).
#: Asked of every provider at once (each answer or failure kept apart).
FanOutHook = Literal[
    "provider_info",
    "list_instance_types",
    "price",
    "list_instances",
    "availability",
    "billed",
    "quotas",
    "spot_notice",
]
#: Asked of one provider, named by the caller: never broadcast.
RoutedHook = Literal["launch", "terminate", "instance_status", "sync_storage"]
FAN_OUT_HOOKS: tuple[FanOutHook, ...] = get_args(FanOutHook)
ROUTED_HOOKS: tuple[RoutedHook, ...] = get_args(RoutedHook)
HOOKS: tuple[str, ...] = FAN_OUT_HOOKS + ROUTED_HOOKS


@hookspec
def provider_info(ctx: HookContext) -> ProviderInfo:
    """Describe this provider: name, title, catalog currency, regions, credential status.

    Fan-out. Must answer offline and fast (no network, no SDK import): ``cloudbroker
    providers`` calls it for every plugin. ``credentials.configured`` says whether the usual
    credential sources hold credentials; ``credentials.source`` names where (``env``, a file),
    never a value. ``catalog_as_of`` is the date of the offline catalog in use.

    :param ctx: the provider's context.
    :returns: :class:`~cloudbroker.models.ProviderInfo`.

    .. versionadded:: 0.1
    """


@hookspec
def list_instance_types(ctx: HookContext, regions: list[str] | None) -> list[InstanceType]:
    """List the GPU instance types this provider offers.

    Fan-out. Offline (``ctx.offline``), answer from the packaged catalog; online, a provider
    may ask its cloud's API. Return only types with GPUs; the core filters by GPU model and
    count.

    :param ctx: the provider's context.
    :param regions: only these regions, or every region when None.
    :returns: a list of :class:`~cloudbroker.models.InstanceType`.

    .. versionadded:: 0.1
    """


@hookspec
def price(ctx: HookContext, regions: list[str] | None) -> PriceSheet:
    """Price sheet: compute rates per type, region and market, plus hidden-cost terms.

    Fan-out. Each compute price carries its billing rule (increment, minimum rental) and
    source; the sheet's region terms carry egress tiers, cross-zone and cross-region rates,
    storage and snapshot rates, each sourced. An unknown price is ``None``, never zero.
    Offline from the packaged catalog; online a provider may use its price API.

    :param ctx: the provider's context.
    :param regions: only these regions, or every region when None.
    :returns: :class:`~cloudbroker.models.PriceSheet` in the currency the cloud publishes.

    .. versionadded:: 0.1
    """


@hookspec
def list_instances(
    ctx: HookContext, regions: list[str] | None, tags: dict[str, str]
) -> list[Instance]:
    """Instances in this provider's account that carry all of ``tags``.

    Fan-out, live (needs credentials). ``cloudbroker gc`` asks every provider for the
    instances tagged ``cloudbroker-managed=true`` and compares them with the state store, so
    that an instance whose launch answer was lost is found and can be terminated. Return
    instances in any state except terminated.

    :param ctx: the provider's context (``ctx.settings`` may name the regions to search).
    :param regions: only these regions, or the provider's configured / default regions.
    :param tags: tag key -> value; every one must match.
    :returns: a list of :class:`~cloudbroker.models.Instance`.

    .. versionadded:: 0.1
    """


@hookspec
def availability(
    ctx: HookContext, regions: list[str], instance_types: list[str], market: Market
) -> list[Availability]:
    """Whether each instance type can be launched in each zone of ``regions`` now.

    Fan-out, live (needs credentials; optional: a provider without it is shown as
    "availability unknown"). ``quote --live`` asks every provider with credentials at once and
    caches the answers with their read time, so answer from one short round of API calls and
    raise a :mod:`cloudbroker.errors` type when the cloud does not answer.

    Return one :class:`~cloudbroker.models.Availability` per zone, type and ``market`` the
    cloud reports on, with the cloud's own words in ``detail``: ``available`` or ``low``
    only from a published stock figure (Aliyun ``WithStock`` / ``ClosedWithStock``, Tencent
    ``EnoughStock`` / ``UnderStock``), ``sold-out``, ``not-offered`` when the cloud does not
    sell the type there in that market, ``unknown`` when it sells it but publishes no stock
    figure (AWS). ``zone`` None is a figure for every zone the answer does not list. Put a
    spot placement score (1-10) in ``score`` where the cloud gives one. A location left out
    is shown as unknown.

    :param ctx: the provider's context.
    :param regions: the regions to report on.
    :param instance_types: the instance type names to report on.
    :param market: the market to report on (stock differs between on-demand and spot).
    :returns: a list of :class:`~cloudbroker.models.Availability`.

    .. versionadded:: 0.1
    """


@hookspec
def billed(ctx: HookContext, instances: list[InstanceRef], start: float, end: float) -> list[Bill]:
    """What the cloud billed for each of ``instances`` (this provider's) from ``start`` to
    ``end`` (epoch seconds, as the state store records them), for the estimate-versus-billed
    column of ``cloudbroker report``.

    Fan-out, live, optional: the core passes every provider the instances of the window and
    each answers for those that are its own (``provider`` equal to its name), from its billing
    API (Aliyun BSS ``DescribeInstanceBill``, Tencent ``DescribeBillResourceSummary``, Huawei
    BSS fee records, AWS Cost Explorer). Leave out an instance the bill does not show yet
    (bills lag by hours): the report then says "not reported by provider", never 0. Say
    when the bill was read (``as_of``) and what it covers (``covers``: billing cycles, days);
    :mod:`cloudbroker.plugins.billing` has the cycles of a window and a per-instance Decimal tally.

    :param ctx: the provider's context.
    :param instances: the instances the report covers, of every provider.
    :param start: the window's start, epoch seconds.
    :param end: the window's end, epoch seconds.
    :returns: a list of :class:`~cloudbroker.models.Bill`.

    .. versionadded:: 0.1
    """


@hookspec
def quotas(
    ctx: HookContext, regions: list[str], instance_types: list[str], market: Market
) -> list[Quota]:
    """The account's quota each instance type draws on in each of ``regions``, where the
    cloud exposes it (AWS Service Quotas, the Chinese clouds' quota APIs).

    Fan-out, live, optional: asked with ``availability`` (``quote --live``, ``place --live``,
    right before ``up`` launches). Return one :class:`~cloudbroker.models.Quota` per region
    and type the cloud has a quota for, with ``limit`` (the account's value), ``need`` (what
    one instance uses of it, in the quota's ``unit``) and the quota's name and code; an offer
    whose need exceeds the limit is shown ``over-quota`` and ranked last. Leave out a type
    the cloud sets no quota on; raise a :mod:`cloudbroker.errors` type when it does not answer
    (the offers' quota stays unknown, never assumed).

    :param ctx: the provider's context.
    :param regions: the regions to report on.
    :param instance_types: the instance type names to report on.
    :param market: the market (clouds keep separate quotas for spot).
    :returns: a list of :class:`~cloudbroker.models.Quota`.

    .. versionadded:: 0.2
    """


@hookspec
def spot_notice(ctx: HookContext) -> SpotNotice:
    """Where an instance of this cloud reads its spot reclaim notice: path, format, lead time.

    Fan-out, offline and fast (static data, no network): ``place`` and ``quote`` ask every
    provider to say which clouds give early warning, and the launch preamble hands the
    answer to the notice agent it installs on every instance. The agent polls
    ``endpoint + path`` on the instance's metadata service (``metadata_endpoint`` overrides
    the address, as for credentials), sending the session ``token`` where the cloud has one;
    404 means no reclaim is scheduled, and an answer in ``format`` (``json-action-time``,
    ``iso-utc`` or ``utc8-time``, see :class:`~cloudbroker.models.SpotNotice`) gives the
    reclaim's time, ``lead_seconds`` ahead. The agent then tells the job, uploads its newest
    checkpoint and writes a marker the watcher acts on at once. Cite the cloud's
    documentation in ``source``.

    Optional: a provider that does not implement it (its cloud documents no in-instance
    notice, as with Huawei) is watched by polling its API (``instance_status``) only.

    :param ctx: the provider's context.
    :returns: :class:`~cloudbroker.models.SpotNotice`.

    .. versionadded:: 0.2
    """


@hookspec
def launch(ctx: HookContext, request: LaunchRequest) -> Instance:
    """Launch one instance; idempotent on ``request.idempotency_key``.

    Routed: called only on the provider named in ``request.provider``. Pass the key as the
    cloud's client token so that a retry after a lost response finds the instance it already
    made instead of creating a second one. Tag the instance with ``request.tags``. Raise
    ConfigError for a missing setting before any API call, CapacityError when the cloud has
    no stock.

    :param ctx: the provider's context.
    :param request: what to launch and with which image, network, key, disk and user data.
    :returns: the :class:`~cloudbroker.models.Instance` as first seen (often pending).

    .. versionadded:: 0.1
    """


@hookspec
def terminate(ctx: HookContext, instance: InstanceRef) -> Instance:
    """Terminate (release) an instance; terminating a terminated instance is not an error.

    Routed. Raise NotFoundError only if the cloud has never heard of the instance.

    :param ctx: the provider's context.
    :param instance: the instance to terminate.
    :returns: the :class:`~cloudbroker.models.Instance` after the request (terminating or
        terminated).

    .. versionadded:: 0.1
    """


@hookspec
def instance_status(ctx: HookContext, instance: InstanceRef) -> Instance:
    """The instance's current state, with ``reclaim`` set when spot capacity is taken back.

    Routed. The broker polls this to detect failures: map the cloud's states onto
    :class:`~cloudbroker.models.InstanceState` and its spot-reclaim signals (interruption
    notices, locks, "recycling") onto ``Instance.reclaim``. For an id the cloud does not know,
    raise NotFoundError; a cloud that stops listing released instances may instead answer
    ``terminated``, since it cannot tell the two apart.

    :param ctx: the provider's context.
    :param instance: the instance to look at.
    :returns: :class:`~cloudbroker.models.Instance`.

    .. versionadded:: 0.1
    """


@hookspec
def sync_storage(ctx: HookContext, bucket: BucketRef) -> StorageRemote:
    """Describe a bucket of this provider as an rclone remote.

    Routed. Return the S3 backend options (``provider`` such as AWS, Alibaba, TencentCOS,
    HuaweiOBS, the region's ``endpoint``) and the credentials as ``secrets``; the core passes
    them to rclone only through environment variables and runs the copy itself.

    Also set ``instance_credentials`` (:class:`~cloudbroker.models.InstanceCredentials`):
    how an instance of this cloud reads its role's short-lived credentials from the cloud's
    metadata service. The launch preamble renders it, so a placement's job reaches this
    bucket with no secret in its user data; the core reads the role's name from the
    ``instance_role`` setting and the service's address from ``metadata_endpoint``. A cloud
    without instance roles sets ``instance_keys`` instead (keys scoped to the bucket, which
    the preamble writes to a root-only file and :func:`cloudbroker.plugins.launching.redact` hides),
    and one whose image provides credentials ``instance_env_auth``; ``place`` refuses a side
    whose remote says none of the three.

    :param ctx: the provider's context.
    :param bucket: the bucket (and path inside it).
    :returns: :class:`~cloudbroker.models.StorageRemote`.

    .. versionadded:: 0.1
    """
