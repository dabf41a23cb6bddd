"""A call held for approval, as an agent meets it: the agent waits for the outcome of its own held
call, an approver denies it, and wait_outcome (sync and asyncio) returns the REFUSED outcome."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from helpers import eventually, grant
from stack import Stack

import toolmesh
from toolmesh.dispatcher.v1 import dispatcher_pb2
from toolmesh.registry.v1 import registry_pb2

#: The invoices py.pay paid; a denied call never reaches it.
PAID: list[str] = []


@toolmesh.tool(
    name="py.pay",
    input_schema={"type": "object", "properties": {"invoice": {"type": "string"}}, "required": ["invoice"]},
    required_scopes=["write:payments"],
    side_effects=True,
)
def pay(args: dict) -> dict:
    """Pays an invoice; a person approves each payment first."""
    PAID.append(args["invoice"])
    return {"paid": args["invoice"]}


@pytest.fixture(scope="module")
def pay_tool(stack: Stack, admin: toolmesh.Toolmesh):
    """py.pay served and registered with requires_approval, granted to agent-py and user-py."""
    server = toolmesh.serve_tools([pay])
    spec = pay.spec(server.address)
    spec.requires_approval = True
    admin.invoke(admin.registry.RegisterTool, registry_pb2.RegisterToolRequest(tool=spec))
    for kind, who in (("agent", "agent-py"), ("user", "user-py")):
        grant(admin, kind, who, "py.pay", ["write:payments"])
    try:
        yield
    finally:
        server.stop()


@pytest.fixture
def approver(stack: Stack, make_client) -> toolmesh.Toolmesh:
    return make_client(stack.token("approver"))


def _hold(agent: toolmesh.Toolmesh, invoice: str) -> toolmesh.CallResult:
    """Calls py.pay as agent-py: once the Dispatcher knows the tool and the grants, the call is held."""
    held = eventually(
        lambda: agent.dispatch("py.pay", {"invoice": invoice}),
        lambda result: result.status == "PENDING",
        timeout=15,
        what="py.pay to be held for approval",
    )
    assert held.error is not None and held.error.code == "awaiting_approval", held
    return held


def _deny(approver: toolmesh.Toolmesh, call_id: str) -> None:
    approver.invoke(
        approver.dispatcher.DecideApproval,
        dispatcher_pb2.DecideApprovalRequest(
            call_id=call_id, decision=dispatcher_pb2.APPROVAL_DECISION_DENY, reason="not this month"
        ),
    )


def _assert_denied(outcome: toolmesh.Outcome, held: toolmesh.CallResult, invoice: str) -> None:
    assert outcome.call_id == held.call_id and outcome.status == "REFUSED" and outcome.final
    assert outcome.reason == "approval_denied"
    assert outcome.error is not None and outcome.error.code == "approval_denied"
    assert "not this month" in outcome.error.message
    assert invoice not in PAID


def test_wait_outcome_returns_the_refused_outcome_of_a_denied_held_call(
    agent: toolmesh.Toolmesh, approver: toolmesh.Toolmesh, pay_tool
):
    held = _hold(agent, "inv-sync")
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(agent.wait_outcome, held.call_id, timeout=20)
        _deny(approver, held.call_id)
        outcome = waiting.result(timeout=30)
    _assert_denied(outcome, held, "inv-sync")


def test_the_asyncio_client_returns_it_too(
    stack: Stack, agent: toolmesh.Toolmesh, agent_token: str, approver: toolmesh.Toolmesh, pay_tool
):
    held = _hold(agent, "inv-async")

    async def run() -> toolmesh.Outcome:
        async with toolmesh.AsyncToolmesh(stack.address("dispatcher"), agent_token, **stack.client_kwargs()) as client:
            waiting = asyncio.create_task(client.wait_outcome(held.call_id, timeout=20))
            await asyncio.to_thread(_deny, approver, held.call_id)
            return await waiting

    _assert_denied(asyncio.run(run()), held, "inv-async")
