"""Launching and finding instances: the request, the reference, the instance as seen now."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import Field

from cloudbroker.models.base import Market, Model
from cloudbroker.money import Money


class InstanceState(StrEnum):
    """An instance's state in cloudbroker's vocabulary; each adapter maps its cloud's onto it.

    ``FAILED``: the cloud says the instance failed (a launch accepted, then refused, such as
    Tencent ``LAUNCH_FAILED``; a server in Huawei ``ERROR``); ``Instance.failure`` holds the
    cloud's reason. The broker moves to the next offer when a launch fails so, and fails over
    when a running primary does; the instance is terminated either way.
    """

    PENDING = "pending"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"
    TERMINATING = "terminating"
    TERMINATED = "terminated"
    FAILED = "failed"
    UNKNOWN = "unknown"


class NetworkSettings(Model):
    vpc: str | None = None
    subnet: str | None = Field(default=None, description="Subnet / VSwitch id")
    security_group: str | None = None


class LaunchRequest(Model):
    """Everything a real launch needs; built from the job and the user's provider settings."""

    provider: str
    region: str
    zone: str | None = None
    instance_type: str
    market: Market = Market.ON_DEMAND
    max_price: Money | None = Field(default=None, description="Spot bid cap per hour")
    idempotency_key: str = Field(min_length=1, max_length=64, description="Client token")
    name: str = "cloudbroker"
    image: str
    network: NetworkSettings = NetworkSettings()
    key_name: str | None = None
    disk_gb: int = Field(default=100, gt=0)
    disk_category: str | None = None
    #: Never in a repr: it may hold a cloud's scoped storage keys (see StorageRemote).
    user_data: str | None = Field(default=None, repr=False)
    tags: dict[str, str] = Field(default_factory=dict)


class InstanceRef(Model):
    """Enough to find an instance again: which provider, where, and its id."""

    provider: str
    region: str
    instance_id: str


class Instance(Model):
    """An instance as the provider sees it now; ``reclaim`` is set when spot is taken back."""

    provider: str
    region: str
    instance_id: str
    state: InstanceState
    zone: str | None = None
    instance_type: str | None = None
    market: Market | None = None
    public_ip: str | None = None
    private_ip: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    launched_at: datetime | None = None
    reclaim: str | None = Field(default=None, description="Why the cloud is taking it back")
    failure: str | None = Field(
        default=None, description="The cloud's reason when ``state`` is FAILED (code, message)"
    )

    @property
    def ref(self) -> InstanceRef:
        return InstanceRef(provider=self.provider, region=self.region, instance_id=self.instance_id)


class Bill(Model):
    """What the cloud billed for one instance over a window (the ``billed`` hook)."""

    provider: str
    instance_id: str
    amount: Money
    source: str = Field(description="The cloud's API that said it, e.g. DescribeInstanceBill")
    as_of: datetime = Field(description="When the bill was read (it lags the spend: partial)")
    covers: str = Field(
        description="What the figure covers as the API bills it, e.g. billing cycles 2026-11"
    )
