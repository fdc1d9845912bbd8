"""Region filters a buyer types: a region code, or a city that matches every cloud's region in it.

``--region cn-beijing`` names one cloud's code; ``--region beijing`` names the city, and
matches Aliyun ``cn-beijing``, Tencent ``ap-beijing`` and AWS ``cn-north-1`` alike. Codes
that name their city (``cn-beijing``, ``ap-tokyo``, ``na-ashburn``) are matched by it; the
others are listed in :data:`CITIES` from each cloud's region list. An unknown name is an
error naming the close regions on every cloud.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

#: Regions whose code does not name the city (provider -> region -> city), from the clouds'
#: region lists: AWS docs.aws.amazon.com/global-infrastructure/latest/regions/aws-regions.html
#: and docs.amazonaws.cn/en_us/aws/latest/userguide/endpoints-Beijing.html (China regions);
#: Alibaba Cloud www.alibabacloud.com/help/en/cloud-migration-guide-for-beginners/latest/
#: regions-and-zones (read 2026-12-01); Tencent codes all name their city (na-ashburn is
#: "US East (Virginia)": www.tencentcloud.com/document/product/213/6091).
CITIES: dict[str, dict[str, str]] = {
    "aws": {
        "us-east-1": "virginia",
        "us-east-2": "ohio",
        "us-west-1": "california",
        "us-west-2": "oregon",
        "eu-central-1": "frankfurt",
        "eu-west-1": "ireland",
        "ap-northeast-1": "tokyo",
        "ap-northeast-2": "seoul",
        "ap-southeast-1": "singapore",
        "ap-southeast-3": "jakarta",
        "ap-southeast-7": "bangkok",
        "cn-north-1": "beijing",
        "cn-northwest-1": "ningxia",
    },
    "aliyun": {
        "ap-northeast-1": "tokyo",
        "ap-northeast-2": "seoul",
        "ap-southeast-1": "singapore",
        "ap-southeast-3": "kualalumpur",
        "ap-southeast-5": "jakarta",
        "ap-southeast-7": "bangkok",
        "eu-central-1": "frankfurt",
        "us-east-1": "virginia",
        "us-west-1": "siliconvalley",
    },
    "tencent": {"na-ashburn": "virginia"},
}


def _key(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def city_of(provider: str, region: str) -> str:
    """The city a region is in, as a key ("beijing", "hongkong"), from its code or CITIES."""
    known = CITIES.get(provider, {}).get(region)
    if known:
        return known
    _, _, rest = region.partition("-")
    return _key(rest or region)


def resolve(
    names: Iterable[str], regions: Mapping[str, set[str]]
) -> tuple[frozenset[tuple[str, str]], tuple[str, ...]]:
    """(the (provider, region) pairs ``names`` match, what each city matched, in words).

    ``regions``: provider -> its regions. A name that is a region code of some cloud matches
    that code on every cloud selling it; else a city matches every cloud's region in it; else
    a :class:`ValueError` names the close regions on every cloud.
    """
    found: set[tuple[str, str]] = set()
    said: list[str] = []
    for name in names:
        exact = {(p, name) for p, rs in regions.items() if name in rs}
        if exact:
            found |= exact
            said.extend(same_city(name, exact, regions))
            continue
        city = _key(name)
        by_city = sorted((p, r) for p, rs in regions.items() for r in rs if city_of(p, r) == city)
        if not by_city:
            raise ValueError(_unknown(name, regions))
        found |= set(by_city)
        said.append(f"region {name} matched: " + ", ".join(f"{p} {r}" for p, r in by_city))
    return frozenset(found), tuple(said)


def same_city(name: str, exact: set[tuple[str, str]], regions: Mapping[str, set[str]]) -> list[str]:
    """A note when other clouds have a region in the city of the code ``name`` (so that
    ``--region cn-beijing`` does not silently drop Tencent ``ap-beijing``)."""
    cities = {city_of(p, r) for p, r in exact}
    others = sorted(
        (p, r)
        for p, rs in regions.items()
        for r in rs
        if (p, r) not in exact and city_of(p, r) in cities
    )
    if not others:
        return []
    city = sorted(cities)[0]
    also = ", ".join(f"{p} {r}" for p, r in others)
    return [f"region {name}: also in {city} ({also}): --region {city} quotes them too"]


def _unknown(name: str, regions: Mapping[str, set[str]]) -> str:
    """The error for a name no cloud knows: the close codes and cities on every cloud."""
    close = []
    for provider, rs in sorted(regions.items()):
        cities = {city_of(provider, r): r for r in rs}
        near = difflib.get_close_matches(name, sorted(rs), n=2, cutoff=0.6)
        near += [cities[c] for c in difflib.get_close_matches(_key(name), sorted(cities), n=2)]
        near = list(dict.fromkeys(near))
        if near:
            close.append(f"{provider} {' or '.join(near)}")
    hint = f"; close: {'; '.join(close)}" if close else ""
    return f"unknown region {name!r}{hint} (a region code, or a city such as beijing)"


def split(values: Iterable[str]) -> tuple[str, ...]:
    """``["aws,aliyun", "tencent"]`` -> ("aws", "aliyun", "tencent"): comma lists accepted.
    An empty part stays (``""``), so that the caller's check names it as bad input."""
    return tuple(part.strip() for value in values for part in value.split(","))
