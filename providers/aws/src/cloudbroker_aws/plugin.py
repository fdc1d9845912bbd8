"""Amazon Web Services hook implementations: delegations to offers, instances and storage.

No SDK import at module level: boto3 is imported by :mod:`cloudbroker_aws.client` inside the
calls that need it, so ``cloudbroker --help`` and offline quotes never pay for it.
"""

from __future__ import annotations

from cloudbroker.models import SpotNotice
from cloudbroker.plugins.context import HookContext
from cloudbroker.plugins.hookspecs import hookimpl
from cloudbroker.plugins.provider import Description, ModularProvider, Modules
from cloudbroker_aws import billing, instances, notice, offers, quotas, storage

DESCRIPTION = Description(
    name="aws",
    title="Amazon Web Services",
    currency="USD",
    credential_env=("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"),
    credential_files=("~/.aws/credentials",),
    credential_hint=("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run 'aws configure'"),
    package="cloudbroker_aws",
    homepage="https://aws.amazon.com/ec2/",
    endpoint_env=(
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_EC2",
        "AWS_ENDPOINT_URL_PRICING",
        "AWS_ENDPOINT_URL_SERVICE_QUOTAS",
        "AWS_ENDPOINT_URL_COST_EXPLORER",
    ),
)


class AwsProvider(ModularProvider):
    """Offline hooks from the catalog; live ones through boto3 when ``ctx.offline`` is False."""

    modules = Modules(offers, instances, quotas, billing, storage)

    @hookimpl
    def spot_notice(self, ctx: HookContext) -> SpotNotice:
        return notice.SPOT_NOTICE


plugin = AwsProvider(DESCRIPTION)
