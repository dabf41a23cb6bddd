"""Typed exceptions for gRPC errors, keeping the decoded toolmesh error details."""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import Message
from google.rpc import status_pb2

from toolmesh.common.v1 import common_pb2

_DETAILS_KEY = "grpc-status-details-bin"
_KNOWN_DETAILS: dict[str, type[Message]] = {
    m.DESCRIPTOR.full_name: m
    for m in (
        common_pb2.ValidationFailure,
        common_pb2.ToolNotFound,
        common_pb2.PermissionDenial,
        common_pb2.BadField,
    )
}


class ToolmeshError(Exception):
    """A gRPC error from a toolmesh service, with its code, message and decoded details."""

    def __init__(self, code: grpc.StatusCode, message: str, details: list[Message] | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        #: Decoded detail messages (ValidationFailure, ToolNotFound, PermissionDenial, BadField);
        #: unknown detail types stay google.protobuf.Any.
        self.details: list[Message] = details or []

    def detail(self, kind: type[Message]) -> Any:
        """The first detail of this message type, or None."""
        return next((d for d in self.details if isinstance(d, kind)), None)

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"


class Unauthenticated(ToolmeshError):
    """The bearer token is missing, malformed, expired or unknown."""


class PermissionDenied(ToolmeshError):
    """No grant allows the call; .missing_scopes and .reason say what is missing."""

    @property
    def denial(self) -> common_pb2.PermissionDenial | None:
        return self.detail(common_pb2.PermissionDenial)

    @property
    def missing_scopes(self) -> list[str]:
        return list(self.denial.missing_scopes) if self.denial else []

    @property
    def reason(self) -> str:
        return self.denial.reason if self.denial and self.denial.reason else self.message

    @property
    def resource(self) -> str:
        return self.denial.resource if self.denial else ""

    @property
    def principal(self) -> str:
        return self.denial.principal if self.denial else ""

    @property
    def deny_grant_id(self) -> str:
        return self.denial.deny_grant_id if self.denial else ""


class InvalidArguments(ToolmeshError):
    """Arguments or request fields are wrong; .violations lists (path, message) pairs."""

    @property
    def failure(self) -> common_pb2.ValidationFailure | None:
        return self.detail(common_pb2.ValidationFailure)

    @property
    def field_violations(self) -> list[common_pb2.FieldViolation]:
        return list(self.failure.violations) if self.failure else []

    @property
    def violations(self) -> list[tuple[str, str]]:
        out = [(v.path, v.message) for v in self.field_violations]
        out += [(b.field, b.description) for b in self.details if isinstance(b, common_pb2.BadField)]
        return out


class NotFound(ToolmeshError):
    """The named object (call, group, grant ...) does not exist."""


class ToolNotFound(NotFound):
    """The tool does not exist or is not visible; .available_tools lists the ones you may use."""

    @property
    def requested(self) -> str:
        d = self.detail(common_pb2.ToolNotFound)
        return d.requested if d else ""

    @property
    def available_tools(self) -> list[str]:
        d = self.detail(common_pb2.ToolNotFound)
        return list(d.available_tools) if d else []


class AlreadyExists(ToolmeshError):
    """The name is taken."""


class FailedPrecondition(ToolmeshError):
    """The object is not in a state that allows this (for example a disabled tool)."""


class Aborted(ToolmeshError):
    """A concurrent change won (for example a stale expected_revision)."""


class Unavailable(ToolmeshError):
    """The service is down or not ready; retried by the client before this is raised."""


class DeadlineExceeded(ToolmeshError):
    """The client deadline passed before the service answered."""


class Cancelled(ToolmeshError):
    """The RPC was cancelled."""


class ResourceExhausted(ToolmeshError):
    """A limit was hit (message size, rate, batch size)."""


class InternalError(ToolmeshError):
    """A bug or unexpected failure in a service."""


_BY_CODE: dict[grpc.StatusCode, type[ToolmeshError]] = {
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArguments,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExists,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.ABORTED: Aborted,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.CANCELLED: Cancelled,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.INTERNAL: InternalError,
}


def decode_details(trailing_metadata: Any) -> list[Message]:
    """Decodes grpc-status-details-bin (google.rpc.Status) into toolmesh detail messages."""
    for key, value in trailing_metadata or ():
        if key != _DETAILS_KEY:
            continue
        status = status_pb2.Status.FromString(value)
        return [_unpack(a) for a in status.details]
    return []


def _unpack(packed: any_pb2.Any) -> Message:
    kind = _KNOWN_DETAILS.get(packed.TypeName())
    if kind is None:
        return packed
    message = kind()
    packed.Unpack(message)
    return message


def error_from_status(code: grpc.StatusCode, message: str, details: list[Message]) -> ToolmeshError:
    """The typed exception for a status code and its details."""
    kind = _BY_CODE.get(code, ToolmeshError)
    if kind is NotFound and any(isinstance(d, common_pb2.ToolNotFound) for d in details):
        kind = ToolNotFound
    return kind(code, message, details)


def from_rpc_error(error: grpc.RpcError) -> ToolmeshError:
    """Turns a grpc.RpcError (sync or aio) into the matching ToolmeshError."""
    code = error.code()  # type: ignore[attr-defined]
    message = error.details() or ""  # type: ignore[attr-defined]
    trailers = error.trailing_metadata()  # type: ignore[attr-defined]
    return error_from_status(code, message, decode_details(trailers))
