"""The Python client and tool SDK against a real stack (nats-server + service processes)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading

import nats
import pytest
import sample_tools
from helpers import eventually, grant
from stack import REPO, Stack

import toolmesh
from toolmesh.permission.v1 import permission_pb2
from toolmesh.registry.v1 import registry_pb2


@pytest.fixture(scope="session")
def py_tools(stack: Stack, admin: toolmesh.Toolmesh):
    """The sample Python tools, served and registered, with grants for agent-py / user-py."""
    server = toolmesh.serve_tools(sample_tools.ALL, registry=(stack.address("registry"), stack.admin_token))
    for kind, who in (("agent", "agent-py"), ("user", "user-py")):
        grant(admin, kind, who, "py.**", ["read:data"])
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def dispatch_ready(stack: Stack, py_tools, agent: toolmesh.Toolmesh):
    """Waits until the Dispatcher's snapshots know the tools and the grants."""
    eventually(
        lambda: agent.dispatch("py.echo", {"text": "warm"}),
        lambda r: r.ok,
        timeout=15,
        what="the dispatcher to see py.echo and its grants",
    )


def test_register_serves_and_registers_each_tool(stack: Stack, admin: toolmesh.Toolmesh, py_tools):
    tools = {t.name: t for t in admin.list_tools(keyword="py.")}
    assert set(tools) >= {"py.echo", "py.slow", "py.fail", "py.secret"}
    echo = tools["py.echo"]
    assert echo.raw.spec.runtime.grpc.address == py_tools.address
    assert echo.required_scopes == ["read:data"]
    assert echo.input_schema["required"] == ["text"]
    assert echo.description.startswith("Repeats text")


def test_registering_again_updates_the_tool(stack: Stack, admin: toolmesh.Toolmesh, py_tools):
    before = admin.invoke(admin.registry.GetTool, registry_pb2.GetToolRequest(name="py.fail")).tool
    second = toolmesh.serve_tools([sample_tools.fail], registry=(stack.address("registry"), stack.admin_token))
    try:
        after = admin.invoke(admin.registry.GetTool, registry_pb2.GetToolRequest(name="py.fail")).tool
        assert after.spec.runtime.grpc.address == second.address
        assert after.revision > before.revision
    finally:
        second.stop()
        toolmesh.register_tools([sample_tools.fail], py_tools.address, (stack.address("registry"), stack.admin_token))


def test_a_bad_schema_is_refused_with_the_field_named(admin: toolmesh.Toolmesh):
    bad = toolmesh.tool(name="py.badschema", input_schema={"type": "object", "properties": {"a": {"type": "nope"}}})(
        sample_tools.fail.fn
    )
    with pytest.raises(toolmesh.InvalidArguments) as caught:
        admin.invoke(admin.registry.RegisterTool, registry_pb2.RegisterToolRequest(tool=bad.spec("127.0.0.1:1")))
    assert caught.value.violations[0][0] == "tool.input_schema"
    assert "does not compile" in caught.value.violations[0][1]


def test_an_unknown_token_is_unauthenticated(make_client):
    with pytest.raises(toolmesh.Unauthenticated) as caught:
        make_client("not-a-token").list_tools()
    assert "bearer token rejected" in caught.value.message


def test_an_agent_may_not_register(make_client, agent_token: str):
    spec = sample_tools.echo.spec("127.0.0.1:1")
    client = make_client(agent_token)
    with pytest.raises(toolmesh.PermissionDenied) as caught:
        client.invoke(client.registry.RegisterTool, registry_pb2.RegisterToolRequest(tool=spec))
    assert "admin" in caught.value.reason


def test_grant_makes_the_tools_visible_to_the_agent(stack: Stack, agent: toolmesh.Toolmesh, py_tools):
    names = eventually(
        lambda: {t.name for t in agent.list_tools()},
        lambda seen: {"py.echo", "py.slow", "py.fail"} <= seen,
        what="the granted tools in the agent's list",
    )
    # py.secret needs write:secret, which no grant gives the agent.
    assert "py.secret" not in names


def test_export_tool_schemas_for_openai_and_anthropic(admin: toolmesh.Toolmesh, py_tools):
    openai = admin.export_tool_schemas("openai", names=["py.echo"])
    assert openai[0]["type"] == "function"
    assert openai[0]["function"]["parameters"]["required"] == ["text"]
    anthropic = admin.export_tool_schemas("anthropic", names=["py.echo"])
    assert anthropic[0]["input_schema"]["properties"]["text"]["type"] == "string"
    with pytest.raises(ValueError, match="format must be one of"):
        admin.export_tool_schemas("gemini")


def test_ts_client_calls_the_python_backend(py_tools):
    """A TypeScript client (connect-node over gRPC) invokes the Python tool as the Dispatcher does."""
    line = _ts_agent("backend", py_tools.address, "py.echo", {"text": "ab", "times": 2})
    messages = line["messages"]
    kinds = [m["event"]["kind"] for m in messages if "event" in m]
    assert kinds == ["TRACE_EVENT_KIND_DATA_QUERY", "TRACE_EVENT_KIND_CUSTOM"]
    assert messages[1]["event"]["customKind"] == "CACHE_MISS"
    result = messages[-1]["result"]["output"]
    assert result == {"text": "abab", "call_id": "ts-call-1", "agent": "ts-agent"}


def test_ts_client_gets_not_found_for_a_tool_not_served(py_tools):
    line = _ts_agent("backend", py_tools.address, "py.nope", {})
    assert line["error"]["code"] == 5  # NOT_FOUND
    assert "served: py.echo, py.fail, py.secret, py.slow, py.upper" in line["error"]["message"]


def test_dispatch_runs_the_python_tool(agent: toolmesh.Toolmesh, dispatch_ready):
    result = agent.dispatch("py.echo", {"text": "hi", "times": 3}, trace_id="4bf92f3577b34da6a3ce929d0e0e4736")
    assert result.status == "SUCCESS", result
    assert result.output["text"] == "hihihi"
    assert result.output["agent"] == "agent-py"
    assert result.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert result.output["call_id"] == result.call_id and result.attempts == 1


def test_an_idempotency_key_replays_the_first_outcome(agent: toolmesh.Toolmesh, dispatch_ready):
    first = agent.dispatch("py.echo", {"text": "once"}, idempotency_key="py-tests-key-1")
    again = agent.dispatch("py.echo", {"text": "once"}, idempotency_key="py-tests-key-1")
    assert again.replayed and not first.replayed
    assert again.call_id == first.call_id and again.output == first.output


def test_an_async_tool_runs(agent: toolmesh.Toolmesh, dispatch_ready):
    result = agent.dispatch("py.upper", {"text": "shout"})
    assert result.status == "SUCCESS" and result.output == {"text": "SHOUT"}


def test_a_priced_tool_reports_what_a_call_cost(agent: toolmesh.Toolmesh, dispatch_ready):
    result = agent.dispatch("py.upper", {"text": "four"})
    assert result.cost == toolmesh.Cost(currency="CREDITS", micros=1000 + 4 * 2500, reported_micros=4 * 2500)
    assert result.cost.amount == 0.011
    plain = agent.dispatch("py.echo", {"text": "free"})
    assert plain.cost is None
    outcome = agent.wait_outcome(result.call_id)
    assert outcome.cost == result.cost


def test_a_tool_failure_is_an_outcome_not_an_exception(agent: toolmesh.Toolmesh, dispatch_ready):
    result = agent.dispatch("py.fail", {"sku": "w-1"})
    assert result.status == "FAILURE"
    assert result.error is not None and result.error.code == "out_of_stock"
    assert result.error.message == "no widgets left; try again tomorrow"


def test_bad_arguments_raise_invalid_arguments_with_each_path(agent: toolmesh.Toolmesh, dispatch_ready):
    with pytest.raises(toolmesh.InvalidArguments) as caught:
        agent.dispatch("py.echo", {"text": "", "times": 0})
    paths = dict(caught.value.violations)
    assert set(paths) == {"/text", "/times"}, caught.value.violations
    assert caught.value.failure is not None and "py.echo" in caught.value.failure.subject


def test_a_missing_scope_raises_permission_denied(agent: toolmesh.Toolmesh, dispatch_ready):
    with pytest.raises(toolmesh.PermissionDenied) as caught:
        agent.dispatch("py.secret", {})
    assert caught.value.missing_scopes == ["write:secret"]
    assert caught.value.reason


def test_an_unknown_tool_lists_the_available_ones(agent: toolmesh.Toolmesh, dispatch_ready):
    with pytest.raises(toolmesh.ToolNotFound) as caught:
        agent.dispatch("py.ecko", {"text": "x"})
    assert caught.value.requested == "py.ecko"
    assert "py.echo" in caught.value.available_tools


def test_a_timeout_is_interrupted(agent: toolmesh.Toolmesh, dispatch_ready):
    result = agent.dispatch("py.slow", {"seconds": 5}, timeout=0.5)
    assert result.status == "INTERRUPTED", result
    assert result.duration_ms < 3000
    # The Python tool saw the cancellation through ctx.cancelled and stopped early.
    ending = eventually(
        lambda: sample_tools.SLOW_ENDINGS.get(result.call_id), lambda e: e is not None, what="py.slow to end"
    )
    assert ending == "cancelled"


def test_batch_keeps_order_and_reports_refusals(agent: toolmesh.Toolmesh, dispatch_ready):
    results = agent.batch([("py.echo", {"text": "a"}), ("py.secret", {}), {"tool": "py.echo", "arguments": {"text": "b"}}])
    assert [r.status for r in results] == ["SUCCESS", "REFUSED", "SUCCESS"]
    assert results[0].output["text"] == "a" and results[2].output["text"] == "b"
    assert results[1].refusal_code == "PERMISSION_DENIED"


def test_ts_agent_dispatches_to_the_python_tool(stack: Stack, agent_token: str, dispatch_ready):
    line = _ts_agent("dispatch", stack.address("dispatcher"), "py.echo", {"text": "ts"}, agent_token)
    assert line["response"]["status"] == "CALL_STATUS_SUCCESS", line
    assert line["response"]["output"]["text"] == "ts"


def test_async_client_dispatches(stack: Stack, agent_token: str, dispatch_ready):
    async def run():
        async with toolmesh.AsyncToolmesh(
            stack.address("dispatcher"), agent_token, **stack.client_kwargs()
        ) as client:
            ok, bad = await asyncio.gather(
                client.dispatch("py.echo", {"text": "async"}),
                client.dispatch("py.echo", {"times": 1}),
                return_exceptions=True,
            )
            return ok, bad

    ok, bad = asyncio.run(run())
    assert ok.status == "SUCCESS" and ok.output["text"] == "async"
    assert isinstance(bad, toolmesh.InvalidArguments)


def test_async_client_covers_every_operation(stack: Stack, agent_token: str, dispatch_ready):
    async def run():
        async with toolmesh.AsyncToolmesh(stack.address("dispatcher"), agent_token, **stack.client_kwargs()) as client:
            batch = await client.batch([("py.echo", {"text": "x"}), ("py.secret", {})])
            outcome = await client.wait_outcome(batch[0].call_id, timeout=10)
            tools = {t.name for t in await client.list_tools(keyword="py.")}
            exported = await client.export_tool_schemas("mcp", names=["py.echo"])
            with pytest.raises(toolmesh.NotFound):
                await client.cancel("no-such-call")
            return batch, outcome, tools, exported

    batch, outcome, tools, exported = asyncio.run(run())
    assert [r.status for r in batch] == ["SUCCESS", "REFUSED"]
    assert outcome.call_id == batch[0].call_id and outcome.output["text"] == "x"
    assert "py.echo" in tools and "py.secret" not in tools
    assert exported[0]["name"] == "py.echo" and exported[0]["inputSchema"]["required"] == ["text"]


def test_callback_event_arrives_over_nats(stack: Stack, agent: toolmesh.Toolmesh, dispatch_ready):
    async def run():
        nc = await nats.connect(stack.nats_url, nkeys_seed=stack.nats_agent_nkey_file)
        try:
            async with toolmesh.callback_events(nc, status="success", tool="py.echo") as events:
                result = await asyncio.to_thread(agent.dispatch, "py.echo", {"text": "nats"})
                async for outcome in events:
                    if outcome.call_id == result.call_id:
                        return result, outcome
        finally:
            await nc.close()

    result, outcome = asyncio.run(asyncio.wait_for(run(), 15))
    assert outcome.status == "SUCCESS" and outcome.output["text"] == "nats"
    assert outcome.agent_id == "agent-py" and outcome.tool == "py.echo"
    assert outcome.trace_id == result.trace_id


def test_a_durable_subscription_gets_events_published_while_away(
    stack: Stack, agent: toolmesh.Toolmesh, dispatch_ready
):
    options = {"status": "failure", "tool": "py.fail", "durable": "py-tests-durable"}

    async def first_visit():
        nc = await nats.connect(stack.nats_url, nkeys_seed=stack.nats_agent_nkey_file)
        try:
            async with toolmesh.callback_events(nc, **options):
                pass
        finally:
            await nc.close()

    async def come_back(call_id: str):
        nc = await nats.connect(stack.nats_url, nkeys_seed=stack.nats_agent_nkey_file)
        try:
            async with toolmesh.callback_events(nc, **options) as events:
                async for outcome in events:
                    if outcome.call_id == call_id:
                        return outcome
        finally:
            await nc.close()

    asyncio.run(first_visit())
    # Nobody is subscribed while this call runs; the durable consumer keeps its event.
    result = agent.dispatch("py.fail", {"sku": "away"})
    outcome = asyncio.run(asyncio.wait_for(come_back(result.call_id), 15))
    assert outcome.status == "FAILURE" and outcome.error is not None
    assert outcome.error.code == "out_of_stock"


def test_wait_outcome_returns_the_final_outcome(stack: Stack, agent: toolmesh.Toolmesh, dispatch_ready):
    result = agent.dispatch("py.echo", {"text": "watch"})
    outcome = agent.wait_outcome(result.call_id, timeout=10)
    assert outcome.call_id == result.call_id and outcome.status == "SUCCESS"
    assert outcome.output["text"] == "watch"


def test_cancel_of_an_unknown_call_is_not_found(agent: toolmesh.Toolmesh, dispatch_ready):
    with pytest.raises(toolmesh.NotFound):
        agent.cancel("no-such-call")


def _ts_agent(mode: str, address: str, tool: str, args: dict, token: str = "") -> dict:
    out = subprocess.run(
        ["node", "--import", "tsx", str(REPO / "libs/python/tests/ts_agent.ts"), mode, address, tool, json.dumps(args), token],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])



def test_run_tool_calls_answers_an_anthropic_reply_in_its_dialect(agent: toolmesh.Toolmesh, dispatch_ready):
    reply = {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "py__echo", "input": {"text": "from a model"}},
            {"type": "tool_use", "id": "toolu_2", "name": "py__echo", "input": {"text": 5}},
        ],
    }
    [message] = agent.run_tool_calls(reply)
    assert message["role"] == "user"
    ok, bad = message["content"]
    assert ok["tool_use_id"] == "toolu_1" and "from a model" in ok["content"] and "is_error" not in ok
    assert bad["tool_use_id"] == "toolu_2" and bad["is_error"] is True and "/text" in bad["content"]


def test_a_deferred_tool_reports_its_outcome_with_its_own_credential(
    stack: Stack, admin: toolmesh.Toolmesh, agent: toolmesh.Toolmesh, dispatch_ready
):
    key = admin.invoke(
        admin.permission.CreateApiKey,
        permission_pb2.CreateApiKeyRequest(agent_id="py-render-backend", roles=["tool-backend"], name="render tool"),
    )
    release = threading.Event()

    @toolmesh.tool(name="py.render", input_schema={"type": "object", "properties": {"label": {"type": "string"}}})
    def render(args: dict, ctx: toolmesh.ToolContext):
        """Renders a report later."""

        def work() -> dict:
            release.wait(20)
            if args["label"] == "broken":
                raise toolmesh.ToolError("render_failed", "cannot render broken")
            return {"report": f"report for {args['label']}"}

        return ctx.defer(work)

    server = toolmesh.serve_tools(
        [render],
        registry=(stack.address("registry"), stack.admin_token),
        reports=toolmesh.Reports(callback=stack.address("callback"), token=key.secret, agent_id="py-render-backend"),
    )
    try:
        grant(admin, "agent", "agent-py", "py.render", ["*"])
        grant(admin, "user", "user-py", "py.render", ["*"])
        first = eventually(
            lambda: agent.dispatch("py.render", {"label": "q3"}),
            lambda r: r.status == "PENDING",
            timeout=15,
            what="py.render to answer PENDING",
        )
        broken = agent.dispatch("py.render", {"label": "broken"})
        assert broken.status == "PENDING"
        release.set()
        done = agent.wait_outcome(first.call_id, timeout=20)
        assert done.status == "SUCCESS"
        assert done.output == {"report": "report for q3"}
        failed = agent.wait_outcome(broken.call_id, timeout=20)
        assert failed.status == "FAILURE"
        assert failed.error is not None and failed.error.code == "render_failed"
    finally:
        release.set()
        server.stop()


def test_calls_fail_over_between_two_dispatchers(stack: Stack, agent_token: str, dispatch_ready):
    """Two Dispatchers behind no load balancer: calls spread over both and, once one is killed,
    every call still succeeds on the other."""
    both = f"{stack.address('dispatcher')},{stack.address('dispatcher-2')}"
    with toolmesh.Toolmesh(both, agent_token, default_timeout=15, **stack.client_kwargs()) as client:
        # Round robin reaches both; each must know the tools and grants before the count starts.
        eventually(
            lambda: [client.dispatch("py.echo", {"text": "warm"}) for _ in range(4)],
            lambda results: all(r.ok for r in results),
            timeout=15,
            what="both Dispatchers to run py.echo",
        )
        for _ in range(6):
            assert client.dispatch("py.echo", {"text": "both"}).output["text"] == "both"
        stack.kill("dispatcher-2")
        for _ in range(20):
            assert client.dispatch("py.echo", {"text": "one"}).output["text"] == "one"
