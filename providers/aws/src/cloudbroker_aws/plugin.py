"""Amazon Web Services hook implementations.

No SDK import at module level: SDK calls are imported inside the hooks that need them.
"""

from __future__ import annotations

from cloudbroker.provider import CatalogProvider, Description

DESCRIPTION = Description(
    name="aws",
    title="Amazon Web Services",
    currency="USD",
    credential_env=("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"),
    credential_files=("~/.aws/credentials",),
    credential_hint=("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run 'aws configure'"),
    package="cloudbroker_aws",
    homepage="https://aws.amazon.com/ec2/",
)


plugin = CatalogProvider(DESCRIPTION)
