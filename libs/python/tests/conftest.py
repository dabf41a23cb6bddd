"""Fixtures: one real toolmesh stack per session (see stack.py) and clients for it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from stack import REPO, Stack, start_stack  # noqa: E402

import toolmesh  # noqa: E402

#: The principals the tests act as; the stack mints a token for each (Stack.token(name)).
PRINCIPALS = {
    "agent": {"sub": "agent-py", "roles": ["agent"], "onBehalfOf": "user-py"},
    # The parity vectors' agent, as test/vectors/cases.json names it.
    "vectors": json.loads((REPO / "test/vectors/cases.json").read_text())["agent"],
    # Decides held calls (TOOLMESH_APPROVER_ROLES defaults to approver).
    "approver": {"sub": "approver-py", "roles": ["agent", "approver"]},
}


@pytest.fixture(scope="session")
def stack():
    running = start_stack(PRINCIPALS)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="session")
def admin(stack: Stack):
    with toolmesh.Toolmesh(stack.address("dispatcher"), stack.admin_token, **stack.client_kwargs()) as client:
        yield client


@pytest.fixture(scope="session")
def agent_token(stack: Stack) -> str:
    return stack.token("agent")


@pytest.fixture(scope="session")
def agent(stack: Stack, agent_token: str):
    address = stack.address("dispatcher")
    with toolmesh.Toolmesh(address, agent_token, default_timeout=15, **stack.client_kwargs()) as client:
        yield client


@pytest.fixture
def make_client(stack: Stack):
    """Builds a sync client for a token, closed after the test."""
    made: list[toolmesh.Toolmesh] = []

    def make(token: str, **kwargs) -> toolmesh.Toolmesh:
        client = toolmesh.Toolmesh(stack.address("dispatcher"), token, **{**stack.client_kwargs(), **kwargs})
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()
