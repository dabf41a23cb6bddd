"""Request building, addresses and retry policy shared by the sync and asyncio clients."""

from __future__ import annotations

import ipaddress
import random
import socket
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

from toolmesh.common.v1 import common_pb2
from toolmesh.dispatcher.v1 import dispatcher_pb2
from toolmesh.registry.v1 import registry_pb2
from toolmesh.structs import to_struct

DEFAULT_PORTS = {"dispatcher": 7100, "registry": 7101, "permission": 7102, "audit": 7103, "callback": 7104}

#: Extra time the RPC deadline gets over a call's own timeout, so that the Dispatcher can
#: answer INTERRUPTED instead of the client giving up with DEADLINE_EXCEEDED.
DISPATCH_GRACE_S = 2.0
#: How long chat() waits by default: the tool agent answers within TOOLMESH_CHAT_TIMEOUT_MS (2 min).
CHAT_TIMEOUT_S = 130.0

SCHEMA_FORMATS = {
    "openai": registry_pb2.SCHEMA_FORMAT_OPENAI,
    "anthropic": registry_pb2.SCHEMA_FORMAT_ANTHROPIC,
    "mcp": registry_pb2.SCHEMA_FORMAT_MCP,
}


@dataclass(frozen=True)
class Call:
    """One call of a batch."""

    tool: str
    arguments: Mapping[str, Any] | None = None
    timeout: float | None = None
    trace_id: str = ""
    idempotency_key: str = ""


CallLike = Union[Call, tuple, Mapping[str, Any]]


@dataclass(frozen=True)
class RetryPolicy:
    """Retries on UNAVAILABLE only: at most `attempts` tries, exponential backoff with jitter."""

    attempts: int = 4
    initial_backoff: float = 0.1
    max_backoff: float = 2.0

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based)."""
        base = min(self.max_backoff, self.initial_backoff * (2 ** (attempt - 1)))
        return base * (0.5 + random.random() / 2)


Addresses = Union[str, Sequence[str]]


def address_list(address: Addresses) -> list[str]:
    """The replicas' host:port addresses: a list, or one string with commas between them."""
    parts = address.split(",") if isinstance(address, str) else list(address)
    found = [p.strip() for p in parts if p.strip()]
    if not found:
        raise ValueError("an address is needed: host:port, or several separated by commas")
    return found


def channel_target(address: Addresses) -> tuple[str, list[tuple[str, Any]]]:
    """The gRPC target and channel options for one address or several replicas.

    Several become one channel over all of them with gRPC's round_robin policy: each RPC goes to
    the next READY connection and one that is down is skipped until it is back. Host names are
    resolved once, here, because the target lists addresses.
    """
    parts = address_list(address)
    if len(parts) == 1:
        return parts[0], []
    ips = []
    for part in parts:
        host, _, port = part.rpartition(":")
        host = host.strip("[]")
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            ip = ipaddress.ip_address(socket.getaddrinfo(host, int(port), proto=socket.IPPROTO_TCP)[0][4][0])
        ips.append((ip, port))
    if all(ip.version == 4 for ip, _ in ips):
        target = "ipv4:" + ",".join(f"{ip}:{port}" for ip, port in ips)
    elif all(ip.version == 6 for ip, _ in ips):
        target = "ipv6:" + ",".join(f"[{ip}]:{port}" for ip, port in ips)
    else:
        raise ValueError(f"the addresses {parts} mix IPv4 and IPv6; give all of one kind")
    # The default :authority would be the whole list, commas included, which HTTP/2 servers
    # refuse; the first address stands for the service.
    return target, [("grpc.lb_policy_name", "round_robin"), ("grpc.default_authority", parts[0])]


def service_address(address: Addresses, service: str, given: Addresses | None) -> Addresses:
    """The explicit address(es), or the first dispatcher's host with the service's default port."""
    if given:
        return given
    first = address_list(address)[0]
    host = first.rsplit(":", 1)[0] if ":" in first and not first.endswith("]") else first
    return f"{host}:{DEFAULT_PORTS[service]}"


def auth_metadata(token: str) -> tuple[tuple[str, str], ...]:
    if not token:
        raise ValueError("a bearer token is needed: pass token= (a JWT or an API key secret)")
    return (("authorization", f"Bearer {token}"),)


def dispatch_request(
    tool: str,
    args: Mapping[str, Any] | None,
    *,
    trace_id: str = "",
    parent_id: str = "",
    call_id: str = "",
    idempotency_key: str = "",
    timeout: float | None = None,
) -> dispatcher_pb2.DispatchRequest:
    if not tool:
        raise ValueError("tool must name a registered tool, for example 'data.query'")
    return dispatcher_pb2.DispatchRequest(
        tool=tool,
        arguments=to_struct(dict(args) if args else None),
        context=common_pb2.CallContext(
            trace_id=trace_id, parent_id=parent_id, call_id=call_id, idempotency_key=idempotency_key
        ),
        timeout_ms=int(round(timeout * 1000)) if timeout else 0,
    )


def as_call(item: CallLike) -> Call:
    if isinstance(item, Call):
        return item
    if isinstance(item, tuple):
        return Call(*item)
    if isinstance(item, Mapping):
        return Call(
            tool=item["tool"],
            arguments=item.get("arguments", item.get("args")),
            timeout=item.get("timeout"),
            trace_id=item.get("trace_id", ""),
            idempotency_key=item.get("idempotency_key", ""),
        )
    raise TypeError(f"a batch item is a Call, a (tool, args) tuple or a dict, not {type(item).__name__}")


def batch_request(
    calls: Iterable[CallLike], trace_id: str = ""
) -> tuple[dispatcher_pb2.DispatchBatchRequest, float | None]:
    """The batch request and the longest per-call timeout (None when no call has one)."""
    items = [as_call(c) for c in calls]
    if not items:
        raise ValueError("a batch needs at least one call")
    request = dispatcher_pb2.DispatchBatchRequest(
        trace_id=trace_id,
        calls=[
            dispatch_request(
                c.tool, c.arguments, trace_id=c.trace_id, idempotency_key=c.idempotency_key, timeout=c.timeout
            )
            for c in items
        ],
    )
    timeouts = [c.timeout for c in items if c.timeout]
    return request, (sum(timeouts) if timeouts else None)


def export_request(
    format: str, group: str = "", names: Iterable[str] = (), include_deprecated: bool = False
) -> registry_pb2.ExportToolSchemasRequest:
    kind = SCHEMA_FORMATS.get(format.lower())
    if kind is None:
        raise ValueError(f"format must be one of {', '.join(SCHEMA_FORMATS)}, not {format!r}")
    return registry_pb2.ExportToolSchemasRequest(
        format=kind, group=group, names=list(names), include_deprecated=include_deprecated
    )


def list_tools_request(category: str = "", keyword: str = "", group: str = "", page_token: str = ""):
    return registry_pb2.ListToolsRequest(
        category=category, keyword=keyword, group=group, page_size=500, page_token=page_token
    )
