"""Fixtures: one real toolmesh stack per session (see stack.py) and clients for it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from stack import Stack, mint_jwt, start_stack  # noqa: E402

import toolmesh  # noqa: E402


@pytest.fixture(scope="session")
def stack():
    running = start_stack()
    try:
        yield running
    finally:
        running.stop()


def _dispatcher_address(stack: Stack) -> str:
    # Without a dispatcher, clients still reach the registry and permission services; a
    # dispatch test calls stack.require("dispatcher") first and skips.
    return f"127.0.0.1:{stack.ports['dispatcher']}" if stack.has("dispatcher") else "127.0.0.1:9"


@pytest.fixture(scope="session")
def admin(stack: Stack):
    with toolmesh.Toolmesh(_dispatcher_address(stack), stack.admin_token, **stack.client_kwargs()) as client:
        yield client


@pytest.fixture(scope="session")
def agent_token() -> str:
    return mint_jwt("agent-py", ["agent"], on_behalf_of="user-py")


@pytest.fixture(scope="session")
def agent(stack: Stack, agent_token: str):
    with toolmesh.Toolmesh(
        _dispatcher_address(stack), agent_token, default_timeout=15, **stack.client_kwargs()
    ) as client:
        yield client


@pytest.fixture
def make_client(stack: Stack):
    """Builds a sync client for a token, closed after the test."""
    made: list[toolmesh.Toolmesh] = []

    def make(token: str, **kwargs) -> toolmesh.Toolmesh:
        client = toolmesh.Toolmesh(_dispatcher_address(stack), token, **{**stack.client_kwargs(), **kwargs})
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()
