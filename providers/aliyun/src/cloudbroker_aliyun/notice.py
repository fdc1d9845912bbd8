"""The ECS preemptible instance interruption notice, as the instance reads it (notice agent).

``GET /latest/meta-data/instance/spot/termination-time`` answers 404 while the instance is
available, and the release time as a UTC timestamp (``2015-01-05T18:02:00Z``) once it is
interrupted; hardened mode takes the token of ``PUT /latest/api/token``
(https://www.alibabacloud.com/help/en/ecs/user-guide/best-practices-for-preemptible-instances/).
The notice comes five minutes before the release (SDK ``RunInstancesRequest.spot_duration``
docstring: "sends you a notification through an ECS system event 5 minutes before the
instance is released"); the API shows it too, as ``OperationLocks: Recycling``, which the
watcher's polling reads (``instances.status``).
"""

from __future__ import annotations

from cloudbroker.models import SpotNotice
from cloudbroker_aliyun.storage import INSTANCE_CREDENTIALS

SPOT_NOTICE = SpotNotice(
    provider="aliyun",
    endpoint=INSTANCE_CREDENTIALS.endpoint,
    path="/latest/meta-data/instance/spot/termination-time",
    format="iso-utc",
    lead_seconds=300,
    token=INSTANCE_CREDENTIALS.token,
    source="https://www.alibabacloud.com/help/en/ecs/user-guide/best-practices-for-preemptible-instances/",
)
