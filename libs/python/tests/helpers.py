"""Small helpers for the stack tests: grants and waiting for a condition with a deadline."""

from __future__ import annotations

import time
from typing import Callable, TypeVar

from toolmesh import Toolmesh
from toolmesh.permission.v1 import permission_pb2

T = TypeVar("T")


def grant(admin: Toolmesh, kind: str, principal_id: str, pattern: str, scopes: list[str], deny: bool = False) -> str:
    """Adds a grant (kind `agent`, `user` or `role`; a `*` in pattern makes it a glob)."""
    spec = permission_pb2.GrantSpec(
        principal=permission_pb2.PrincipalRef(
            kind=permission_pb2.PrincipalKind.Value(f"PRINCIPAL_KIND_{kind.upper()}"), id=principal_id
        ),
        resource=permission_pb2.Resource(
            kind=permission_pb2.RESOURCE_KIND_GLOB if "*" in pattern else permission_pb2.RESOURCE_KIND_TOOL,
            pattern=pattern,
        ),
        scopes=scopes,
        effect=permission_pb2.EFFECT_DENY if deny else permission_pb2.EFFECT_ALLOW,
        enabled=True,
        description="python client tests",
    )
    return admin.invoke(admin.permission.Grant, permission_pb2.GrantRequest(grant=spec)).grant.id


def eventually(probe: Callable[[], T], accept: Callable[[T], bool], timeout: float = 10.0, what: str = "") -> T:
    """Calls probe until accept(result) holds; snapshots (grants, tools) reach other services
    through NATS watches, so a change becomes visible within about a second, not at once."""
    end = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < end:
        try:
            last = probe()
            if accept(last):  # type: ignore[arg-type]
                return last  # type: ignore[return-value]
        except Exception as error:  # the condition may show as an error until it holds
            last = error
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or 'the condition'}; last: {last!r}")
