"""toolmesh for Python: a client for agents, a tool SDK, and callback events over NATS.

Generated messages and stubs live under toolmesh.<area>.v1 (for example
toolmesh.dispatcher.v1.dispatcher_pb2).
"""

from toolmesh._common import Call, RetryPolicy
from toolmesh.aio import AsyncToolmesh
from toolmesh.callbacks import callback_events, callback_subject, subject_token, subscribe_callbacks
from toolmesh.client import Toolmesh
from toolmesh.errors import (
    Aborted,
    AlreadyExists,
    Cancelled,
    DeadlineExceeded,
    FailedPrecondition,
    InternalError,
    InvalidArguments,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    ToolmeshError,
    ToolNotFound,
    Unauthenticated,
    Unavailable,
)
from toolmesh.results import CallError, CallResult, ChatReply, Cost, Outcome, ToolInfo
from toolmesh.structs import from_struct, to_struct
from toolmesh.tools import (
    Deferred,
    Reports,
    Tool,
    ToolContext,
    ToolError,
    ToolServer,
    register_tools,
    serve_tools,
    tool,
)

__all__ = [
    "Deferred",
    "Reports",
    "Aborted",
    "AlreadyExists",
    "AsyncToolmesh",
    "Call",
    "CallError",
    "CallResult",
    "Cost",
    "Cancelled",
    "ChatReply",
    "DeadlineExceeded",
    "FailedPrecondition",
    "InternalError",
    "InvalidArguments",
    "NotFound",
    "Outcome",
    "PermissionDenied",
    "ResourceExhausted",
    "RetryPolicy",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolInfo",
    "ToolNotFound",
    "ToolServer",
    "Toolmesh",
    "ToolmeshError",
    "Unauthenticated",
    "Unavailable",
    "callback_events",
    "callback_subject",
    "from_struct",
    "register_tools",
    "serve_tools",
    "subject_token",
    "subscribe_callbacks",
    "to_struct",
    "tool",
]
