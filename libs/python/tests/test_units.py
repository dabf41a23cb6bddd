"""Tests without a stack: Struct conversion, subject escaping, error decoding."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest
from google.protobuf import any_pb2
from google.rpc import status_pb2

import toolmesh
from toolmesh.callbacks import subject_token_decode
from toolmesh.common.v1 import common_pb2
from toolmesh.errors import decode_details, error_from_status
from toolmesh.results import is_final, status_name

VECTORS = Path(__file__).resolve().parents[3] / "test" / "vectors"


def test_struct_round_trip_keeps_json_types():
    value = {"a": 1, "b": 1.5, "c": "x", "d": [1, {"e": None}], "f": True, "g": {}}
    back = toolmesh.from_struct(toolmesh.to_struct(value))
    assert back == value
    assert type(back["a"]) is int and type(back["b"]) is float


def test_to_struct_refuses_a_non_dict():
    with pytest.raises(TypeError, match="expected a dict"):
        toolmesh.to_struct(["not", "a", "dict"])  # type: ignore[arg-type]


def test_subject_tokens_match_the_typescript_vectors():
    cases = json.loads((VECTORS / "subject-tokens.json").read_text())["cases"]
    for case in cases:
        assert toolmesh.subject_token(case["value"]) == case["token"], case
        assert subject_token_decode(case["token"]) == case["value"]


def test_outcome_words_match_the_typescript_vectors():
    statuses = json.loads((VECTORS / "outcome-words.json").read_text())["statuses"]
    assert {s["status"] for s in statuses} == {status_name(v) for v in common_pb2.CallStatus.values()}
    for case in statuses:
        status = case["status"]
        assert is_final(status) is case["final"], case
        assert status_name(common_pb2.CallStatus.Value(f"CALL_STATUS_{status}")) == status
        assert toolmesh.callback_subject(status) == f"toolmesh.callback.{case['word']}.*"


def test_callback_subject_escapes_the_tool_and_keeps_wildcards():
    assert toolmesh.callback_subject("SUCCESS", "data.query") == "toolmesh.callback.success.data%2Equery"
    assert toolmesh.callback_subject() == "toolmesh.callback.*.*"


def _trailer(*details) -> list[tuple[str, bytes]]:
    status = status_pb2.Status(code=3, message="m")
    for d in details:
        packed = any_pb2.Any()
        packed.Pack(d)
        status.details.append(packed)
    return [("grpc-status-details-bin", status.SerializeToString())]


def test_validation_details_become_violations():
    failure = common_pb2.ValidationFailure(
        subject="data.query",
        violations=[common_pb2.FieldViolation(path="/limit", message="must be >= 1", keyword="minimum")],
    )
    error = error_from_status(grpc.StatusCode.INVALID_ARGUMENT, "bad", decode_details(_trailer(failure)))
    assert isinstance(error, toolmesh.InvalidArguments)
    assert error.violations == [("/limit", "must be >= 1")]
    assert error.field_violations[0].keyword == "minimum"


def test_not_found_with_tool_detail_is_tool_not_found():
    detail = common_pb2.ToolNotFound(requested="data.qury", available_tools=["data.query"])
    error = error_from_status(grpc.StatusCode.NOT_FOUND, "no", decode_details(_trailer(detail)))
    assert isinstance(error, toolmesh.ToolNotFound) and isinstance(error, toolmesh.NotFound)
    assert error.available_tools == ["data.query"] and error.requested == "data.qury"


def test_unknown_detail_types_stay_any():
    packed = status_pb2.Status(code=1)
    details = decode_details(_trailer(packed))
    assert isinstance(details[0], any_pb2.Any)


def test_batch_items_accept_tuples_dicts_and_calls():
    from toolmesh._common import batch_request

    request, timeout = batch_request(
        [("a.b", {"x": 1}), {"tool": "c.d", "arguments": {"y": 2}, "timeout": 1.5}, toolmesh.Call("e.f")]
    )
    assert [c.tool for c in request.calls] == ["a.b", "c.d", "e.f"]
    assert request.calls[1].timeout_ms == 1500 and timeout == 1.5
    with pytest.raises(ValueError, match="at least one call"):
        batch_request([])


def test_a_token_is_required():
    with pytest.raises(ValueError, match="bearer token"):
        toolmesh.Toolmesh("127.0.0.1:1", "")


def test_tool_names_are_checked():
    with pytest.raises(ValueError, match="must be 1-64 characters"):
        toolmesh.tool(name="Bad Name", input_schema={"type": "object"})


def test_retries_stop_after_the_bound_on_unavailable():
    client = toolmesh.Toolmesh(
        "127.0.0.1:9", "t", retry=toolmesh.RetryPolicy(attempts=3, initial_backoff=0.01, max_backoff=0.02)
    )
    calls = []
    original = client.dispatcher.Dispatch

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    client.dispatcher.Dispatch = counting  # type: ignore[method-assign]
    with pytest.raises(toolmesh.Unavailable):
        client.dispatch("a.b", {}, timeout=2)
    assert len(calls) == 3
    client.close()


def test_other_codes_are_not_retried():
    client = toolmesh.Toolmesh("127.0.0.1:9", "t")
    calls = []

    class Denied(grpc.RpcError):
        def code(self):
            return grpc.StatusCode.PERMISSION_DENIED

        def details(self):
            return "no"

        def trailing_metadata(self):
            return ()

    def denied(*args, **kwargs):
        calls.append(1)
        raise Denied()

    with pytest.raises(toolmesh.PermissionDenied):
        client.invoke(denied, None)
    assert len(calls) == 1
    client.close()
