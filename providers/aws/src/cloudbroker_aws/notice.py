"""The EC2 Spot interruption notice an instance reads from IMDS (the notice agent polls it).

``GET /latest/meta-data/spot/instance-action`` answers 404 until EC2 schedules an
interruption, then ``{"action": "terminate" | "stop" | "hibernate", "time": "...Z"}``, two
minutes before it (hibernation starts at once). AWS recommends checking every 5 seconds;
IMDSv2 needs the session token (the same step as for credentials).
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html
The earlier rebalance recommendation (``events/recommendations/rebalance``) is not read:
it is a risk signal, not a reclaim, and failing over on it would move jobs that stay.
"""

from __future__ import annotations

from cloudbroker.models import SpotNotice
from cloudbroker_aws.storage import INSTANCE_CREDENTIALS

SPOT_NOTICE = SpotNotice(
    provider="aws",
    endpoint=INSTANCE_CREDENTIALS.endpoint,
    path="/latest/meta-data/spot/instance-action",
    format="json-action-time",
    lead_seconds=120,
    token=INSTANCE_CREDENTIALS.token,
    source="https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html",
)
