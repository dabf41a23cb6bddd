"""Runs the shared parity vectors (test/vectors/cases.json) with the Python client."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess

import pytest
from stack import REPO, Stack, _Lines

import toolmesh

CASES = json.loads((REPO / "test/vectors/cases.json").read_text())


@pytest.fixture(scope="module")
def vector_stack(stack: Stack):
    """The stack with test/vectors/setup.ts serving and granting the vec.* tools."""
    agent_token = stack.token("vectors")
    env = {
        **os.environ,
        "TOOLMESH_REGISTRY_URL": f"http://{stack.address('registry')}",
        "TOOLMESH_PERMISSION_URL": f"http://{stack.address('permission')}",
        "TOOLMESH_DISPATCHER_URL": f"http://{stack.address('dispatcher')}",
        "TOOLMESH_ADMIN_TOKEN": stack.admin_token,
        "TOOLMESH_VECTOR_AGENT_TOKEN": agent_token,
    }
    proc = subprocess.Popen(
        ["node", "--import", "tsx", str(REPO / "test/vectors/setup.ts")],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = _Lines(proc.stdout), _Lines(proc.stderr)
    try:
        if out.wait_for(lambda line: '"ready":true' in line, 60) is None:
            raise RuntimeError(f"test/vectors/setup.ts did not get ready:\n{out.tail()}\n{err.tail()}")
        yield agent_token
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("flavour", ["sync", "asyncio"])
@pytest.mark.parametrize("case", CASES["cases"], ids=[c["name"] for c in CASES["cases"]])
def test_vector(case: dict, flavour: str, stack: Stack, vector_stack: str):
    token = case.get("token", vector_stack)
    expect = case["expect"]
    try:
        if flavour == "sync":
            with toolmesh.Toolmesh(stack.address("dispatcher"), token, **stack.client_kwargs()) as client:
                got = _run(client, case)
        else:
            got = asyncio.run(_run_async(stack, token, case))
    except toolmesh.ToolmeshError as error:
        assert "code" in expect, f"unexpected {error!r}"
        _check_refusal(error, expect)
        return
    assert "code" not in expect, f"expected {expect['code']}, got {got!r}"
    _check(got, expect)


def _run(client, case: dict):
    """Runs a case with either client flavour; the asyncio one returns awaitables."""
    op = case["op"]
    if op == "dispatch":
        timeout = case["timeout_ms"] / 1000 if "timeout_ms" in case else None
        return client.dispatch(case["tool"], case["arguments"], trace_id=case.get("trace_id", ""), timeout=timeout)
    if op == "batch":
        return client.batch([(c["tool"], c["arguments"]) for c in case["calls"]])
    if op == "list_tools":
        return client.list_tools(keyword=case.get("keyword", ""))
    if op == "export":
        return client.export_tool_schemas(case["format"], names=case.get("names", ()))
    raise AssertionError(f"unknown op {op}")


async def _run_async(stack: Stack, token: str, case: dict):
    async with toolmesh.AsyncToolmesh(stack.address("dispatcher"), token, **stack.client_kwargs()) as client:
        return await _run(client, case)


def _check(got, expect: dict) -> None:
    if "results" in expect:
        assert len(got) == len(expect["results"])
        for result, want in zip(got, expect["results"]):
            _check_result(result, want)
    elif "tools" in expect:
        assert sorted(t.name for t in got) == expect["tools"]
    elif "definitions" in expect:
        assert got == expect["definitions"]
    else:
        _check_result(got, expect)


def _check_result(result: toolmesh.CallResult, want: dict) -> None:
    assert result.status == want["status"], result
    if "output" in want:
        assert result.output == want["output"]
    if "error" in want:
        assert result.error is not None
        for key, value in want["error"].items():
            assert getattr(result.error, key) == value
    for key in ("trace_id", "attempts", "refusal_code"):
        if key in want:
            assert getattr(result, key) == want[key]


def _check_refusal(error: toolmesh.ToolmeshError, expect: dict) -> None:
    assert error.code.name == expect["code"], error
    if "violation_paths" in expect:
        assert isinstance(error, toolmesh.InvalidArguments)
        assert sorted(p for p, _ in error.violations) == sorted(expect["violation_paths"])
    if "missing_scopes" in expect:
        assert isinstance(error, toolmesh.PermissionDenied)
        assert error.missing_scopes == expect["missing_scopes"]
    if "available_tools_include" in expect:
        assert isinstance(error, toolmesh.ToolNotFound)
        assert set(expect["available_tools_include"]) <= set(error.available_tools)
