"""Where the clouds' regions are, so that a placement's standby can be chosen near its primary.

Each region's place and country come from its cloud's region list; each country's area and
continent from the UN M49 standard. A region missing here has an unknown location: it is
never guessed from its code, and ranks after the known near ones (see :func:`nearness`).
"""

from __future__ import annotations

from dataclasses import dataclass

#: provider -> region -> (place, ISO 3166 country), as each cloud's region list names them:
#: AWS docs.aws.amazon.com/global-infrastructure/latest/regions/aws-regions.html and, for the
#: China regions, docs.amazonaws.cn/en_us/aws/latest/userguide/endpoints-Beijing.html;
#: Alibaba Cloud www.alibabacloud.com/help/doc-detail/72379.htm ("Region list": region, city,
#: RegionId) and help.aliyun.com/en/api-gateway/cloud-native-api-gateway/product-overview/
#: regions (cn-wulanchabu Ulanqab, ap-northeast-2 Seoul); cn-heyuan, cn-guangzhou,
#: cn-nanjing, ap-southeast-7: www.alibabacloud.com/help/en/asc/developer-reference/
#: api-aisc-2026-01-01-endpoint; Tencent Cloud www.tencentcloud.com/document/product/213/6091
#: and www.tencentcloud.com/document/api/1235/64586 ("Tencent Cloud currently supports the
#: following regions"); Huawei Cloud support.huaweicloud.com/intl/en-us/usermanual-sdrs/
#: sdrs_ad_0003.html (region name and ID). Places are the keys regions.CITIES uses. Read
#: 2026-12-01.
REGIONS: dict[str, dict[str, tuple[str, str]]] = {
    "aws": {
        "us-east-1": ("virginia", "US"),
        "us-east-2": ("ohio", "US"),
        "us-west-1": ("california", "US"),
        "us-west-2": ("oregon", "US"),
        "ca-central-1": ("canada central", "CA"),
        "sa-east-1": ("saopaulo", "BR"),
        "eu-central-1": ("frankfurt", "DE"),
        "eu-west-1": ("ireland", "IE"),
        "eu-west-2": ("london", "GB"),
        "eu-west-3": ("paris", "FR"),
        "eu-north-1": ("stockholm", "SE"),
        "ap-northeast-1": ("tokyo", "JP"),
        "ap-northeast-2": ("seoul", "KR"),
        "ap-northeast-3": ("osaka", "JP"),
        "ap-southeast-1": ("singapore", "SG"),
        "ap-southeast-2": ("sydney", "AU"),
        "ap-southeast-3": ("jakarta", "ID"),
        "ap-southeast-7": ("bangkok", "TH"),
        "ap-south-1": ("mumbai", "IN"),
        "ap-east-1": ("hongkong", "HK"),
        "cn-north-1": ("beijing", "CN"),
        "cn-northwest-1": ("ningxia", "CN"),
    },
    "aliyun": {
        "cn-qingdao": ("qingdao", "CN"),
        "cn-beijing": ("beijing", "CN"),
        "cn-zhangjiakou": ("zhangjiakou", "CN"),
        "cn-huhehaote": ("huhehaote", "CN"),
        "cn-wulanchabu": ("wulanchabu", "CN"),
        "cn-hangzhou": ("hangzhou", "CN"),
        "cn-shanghai": ("shanghai", "CN"),
        "cn-nanjing": ("nanjing", "CN"),
        "cn-shenzhen": ("shenzhen", "CN"),
        "cn-heyuan": ("heyuan", "CN"),
        "cn-guangzhou": ("guangzhou", "CN"),
        "cn-chengdu": ("chengdu", "CN"),
        "cn-hongkong": ("hongkong", "HK"),
        "ap-northeast-1": ("tokyo", "JP"),
        "ap-northeast-2": ("seoul", "KR"),
        "ap-southeast-1": ("singapore", "SG"),
        "ap-southeast-3": ("kualalumpur", "MY"),
        "ap-southeast-5": ("jakarta", "ID"),
        "ap-southeast-7": ("bangkok", "TH"),
        "us-east-1": ("virginia", "US"),
        "us-west-1": ("siliconvalley", "US"),
        "eu-central-1": ("frankfurt", "DE"),
        "eu-west-1": ("london", "GB"),
        "me-east-1": ("dubai", "AE"),
    },
    "tencent": {
        "ap-guangzhou": ("guangzhou", "CN"),
        "ap-shanghai": ("shanghai", "CN"),
        "ap-nanjing": ("nanjing", "CN"),
        "ap-beijing": ("beijing", "CN"),
        "ap-chengdu": ("chengdu", "CN"),
        "ap-chongqing": ("chongqing", "CN"),
        "ap-hongkong": ("hongkong", "HK"),
        "ap-singapore": ("singapore", "SG"),
        "ap-jakarta": ("jakarta", "ID"),
        "ap-bangkok": ("bangkok", "TH"),
        "ap-mumbai": ("mumbai", "IN"),
        "ap-seoul": ("seoul", "KR"),
        "ap-tokyo": ("tokyo", "JP"),
        "na-ashburn": ("virginia", "US"),
        "na-siliconvalley": ("siliconvalley", "US"),
        "sa-saopaulo": ("saopaulo", "BR"),
        "eu-frankfurt": ("frankfurt", "DE"),
    },
    "huawei": {
        "cn-north-4": ("beijing", "CN"),
        "cn-east-3": ("shanghai", "CN"),
        "cn-east-2": ("shanghai", "CN"),
        "cn-south-1": ("guangzhou", "CN"),
        "ap-southeast-1": ("hongkong", "HK"),
        "ap-southeast-2": ("bangkok", "TH"),
        "ap-southeast-3": ("singapore", "SG"),
        "af-south-1": ("johannesburg", "ZA"),
        "sa-brazil-1": ("saopaulo", "BR"),
        "la-north-2": ("mexicocity", "MX"),
        "la-south-2": ("santiago", "CL"),
        "tr-west-1": ("istanbul", "TR"),
    },
}

#: country -> (area, continent): the UN M49 intermediate region (else sub-region) and region,
#: unstats.un.org/unsd/methodology/m49/ (read 2026-12-01). Hong Kong is its own entry there
#: ("China, Hong Kong Special Administrative Region"), outside mainland China.
COUNTRIES: dict[str, tuple[str, str]] = {
    "US": ("Northern America", "Americas"),
    "CA": ("Northern America", "Americas"),
    "MX": ("Central America", "Americas"),
    "BR": ("South America", "Americas"),
    "CL": ("South America", "Americas"),
    "DE": ("Western Europe", "Europe"),
    "FR": ("Western Europe", "Europe"),
    "IE": ("Northern Europe", "Europe"),
    "GB": ("Northern Europe", "Europe"),
    "SE": ("Northern Europe", "Europe"),
    "CN": ("Eastern Asia", "Asia"),
    "HK": ("Eastern Asia", "Asia"),
    "JP": ("Eastern Asia", "Asia"),
    "KR": ("Eastern Asia", "Asia"),
    "SG": ("South-eastern Asia", "Asia"),
    "ID": ("South-eastern Asia", "Asia"),
    "MY": ("South-eastern Asia", "Asia"),
    "TH": ("South-eastern Asia", "Asia"),
    "IN": ("Southern Asia", "Asia"),
    "AE": ("Western Asia", "Asia"),
    "TR": ("Western Asia", "Asia"),
    "AU": ("Australia and New Zealand", "Oceania"),
    "ZA": ("Southern Africa", "Africa"),
}

MAINLAND = "CN"  # ISO 3166 CN: mainland China (Hong Kong is HK)


@dataclass(frozen=True)
class Location:
    place: str
    country: str

    def text(self) -> str:
        return f"{self.place}, {self.country}"


def location(provider: str, region: str) -> Location | None:
    """Where the region is, from its cloud's region list; None: not in the table (unknown)."""
    found = REGIONS.get(provider, {}).get(region)
    return None if found is None else Location(*found)


@dataclass(frozen=True)
class Nearness:
    """How near a standby's region is to the primary's: ``rank`` orders the choice (0 is the
    same place), ``relation`` says it in words."""

    rank: int
    relation: str


#: The ranks, nearest first: an unknown location ranks after every known one on the same
#: continent, and before a known far one; a pair across the mainland China border last.
SAME_PLACE, SAME_COUNTRY, SAME_AREA, SAME_CONTINENT, UNKNOWN, FAR, ACROSS_BORDER = range(7)


def nearness(primary: tuple[str, str], standby: tuple[str, str]) -> Nearness:
    """How near the standby (provider, region) is to the primary's, by the tables above."""
    a, b = location(*primary), location(*standby)
    if a is None or b is None:
        missing = " and ".join(f"{p} {r}" for (p, r), x in ((primary, a), (standby, b)) if not x)
        return Nearness(UNKNOWN, f"location unknown ({missing}: not in the region table)")
    if (a.country == MAINLAND) != (b.country == MAINLAND):
        return Nearness(
            ACROSS_BORDER, f"across the mainland China border ({a.country} -> {b.country})"
        )
    if a.place == b.place and a.country == b.country:
        return Nearness(SAME_PLACE, f"same place ({a.place})")
    if a.country == b.country:
        return Nearness(SAME_COUNTRY, f"same country ({a.country})")
    area_a, continent_a = COUNTRIES.get(a.country, (None, None))
    area_b, continent_b = COUNTRIES.get(b.country, (None, None))
    if area_a is None or area_b is None:
        return Nearness(UNKNOWN, f"area unknown ({a.country} -> {b.country})")
    if area_a == area_b:
        return Nearness(SAME_AREA, f"same area ({area_a})")
    if continent_a == continent_b:
        return Nearness(SAME_CONTINENT, f"same continent ({continent_a})")
    return Nearness(FAR, f"another continent ({continent_a} -> {continent_b})")
