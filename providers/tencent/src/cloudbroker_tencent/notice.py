"""The CVM spot instance repossession notice, as the instance reads it (notice agent).

``GET metadata.tencentyun.com/latest/meta-data/spot/termination-time`` answers 404 when the
instance is not a spot instance or is not being repossessed, else the termination time as
``2018-08-18 12:05:33``: the instance OS's time **in UTC+8**, not ISO
(https://www.tencentcloud.com/document/product/213/32487). The notice comes two minutes
before the interruption (https://intl.cloud.tencent.com/document/product/213/17817). No
session token step is documented. The API shows nothing before the instance goes.
"""

from __future__ import annotations

from cloudbroker.models import SpotNotice
from cloudbroker_tencent.storage import INSTANCE_CREDENTIALS

SPOT_NOTICE = SpotNotice(
    provider="tencent",
    endpoint=INSTANCE_CREDENTIALS.endpoint,
    path="/latest/meta-data/spot/termination-time",
    format="utc8-time",
    lead_seconds=120,
    source="https://www.tencentcloud.com/document/product/213/32487",
)
