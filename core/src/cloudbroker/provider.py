"""Building blocks for provider plugins: identity and credential discovery, shared by all.

A provider declares one :class:`Description`; its ``provider_info`` hook returns
``DESCRIPTION.info(ctx)``. Keeping this in core means every cloud reports credentials the
same way and no provider copies another's code.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path

from cloudbroker.context import HookContext
from cloudbroker.models import CredentialStatus, ProviderInfo


@dataclass(frozen=True)
class Description:
    name: str
    title: str
    currency: str
    credential_env: tuple[str, ...]
    credential_files: tuple[str, ...]
    credential_hint: str
    homepage: str | None = None

    def credentials(self, ctx: HookContext) -> CredentialStatus:
        """Where credentials would come from, checked without reading or logging any value."""
        if self.credential_env and all(ctx.env.get(name) for name in self.credential_env):
            return CredentialStatus(configured=True, source=f"env {self.credential_env[0]}")
        home = Path(ctx.env.get("HOME") or Path.home())
        for name in self.credential_files:
            path = Path(name.replace("~", str(home), 1))
            if path.is_file():
                return CredentialStatus(configured=True, source=f"file {name}")
        return CredentialStatus(configured=False, hint=self.credential_hint)

    def info(
        self, ctx: HookContext, *, regions: tuple[str, ...] = (), as_of: date | None = None
    ) -> ProviderInfo:
        return ProviderInfo(
            name=self.name,
            title=self.title,
            currency=self.currency,
            regions=regions,
            credentials=self.credentials(ctx),
            catalog_as_of=as_of,
            homepage=self.homepage,
        )
