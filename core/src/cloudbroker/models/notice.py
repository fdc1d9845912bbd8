"""A cloud's spot reclaim notice as an instance reads it from its metadata service.

A provider declares it through the ``spot_notice`` hook; the launch preamble hands it to the
notice agent on every instance (:mod:`cloudbroker.agent`), which polls ``endpoint + path``
and parses the answer by ``format``. A provider without the hook gives no early warning: the
watcher then learns of a reclaim only by polling the cloud's API.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from cloudbroker.models.base import Model
from cloudbroker.models.storage import _LINE, _URL_PATH, MetadataToken

#: How the answer to the notice path is written (parsed by :func:`cloudbroker.agent.notice.parse`):
#: ``json-action-time``: ``{"action": "terminate", "time": "2017-09-18T08:22:00Z"}`` (AWS);
#: ``iso-utc``: ``2015-01-05T18:02:00Z`` (Aliyun);
#: ``utc8-time``: ``2018-08-18 12:05:33``, a wall-clock time in UTC+8, not ISO (Tencent).
NoticeFormat = Literal["json-action-time", "iso-utc", "utc8-time"]


class SpotNotice(Model):
    """Where an instance of this cloud learns that its spot capacity is being taken back.

    A ``GET endpoint + path`` answers 404 while no reclaim is scheduled, and the reclaim's
    time once one is (in ``format``), ``lead_seconds`` (the cloud's documented notice
    period) before the instance is released. ``token``: the metadata service's session
    token step, where it has one (sent when given, as the clouds' SDKs do).
    """

    provider: str
    endpoint: str = Field(
        pattern=r"^https?://[A-Za-z0-9.:-]+$",
        description="The metadata service's URL, e.g. http://169.254.169.254",
    )
    path: str = Field(pattern=_URL_PATH, description="e.g. /latest/meta-data/spot/instance-action")
    format: NoticeFormat
    lead_seconds: int = Field(gt=0, le=3600, description="Documented notice period")
    token: MetadataToken | None = None
    source: str = Field(pattern=_LINE, description="URL of the cloud's documentation of it")
