"""The README examples (libs/python/examples) run against the stack: the tool, then the agent."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers import eventually, grant
from stack import REPO, Stack, _Lines

import toolmesh

EXAMPLES = REPO / "libs/python/examples"


@pytest.fixture(scope="module")
def greet_tool(stack: Stack):
    env = {**os.environ, "TOOLMESH_REGISTRY": stack.address("registry"), "TOOLMESH_TOKEN": stack.admin_token}
    proc = subprocess.Popen([sys.executable, str(EXAMPLES / "tool.py")], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = _Lines(proc.stdout), _Lines(proc.stderr)
    try:
        if out.wait_for(lambda line: line.startswith("serving example.greet"), 30) is None:
            raise RuntimeError(f"examples/tool.py did not start:\n{out.tail()}\n{err.tail()}")
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_example_agent_calls_the_example_tool(stack: Stack, admin: toolmesh.Toolmesh, agent_token: str, greet_tool):
    grant(admin, "agent", "agent-py", "example.greet", ["read:greetings"])
    grant(admin, "user", "user-py", "example.greet", ["read:greetings"])
    env = {**os.environ, "TOOLMESH_ADDRESS": stack.address("dispatcher"), "TOOLMESH_TOKEN": agent_token}

    def run_agent() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(EXAMPLES / "agent.py")], env=env, capture_output=True, text=True, timeout=60)

    done = eventually(run_agent, lambda p: p.returncode == 0, timeout=15, what="examples/agent.py to succeed")
    assert done.stdout.strip() == "SUCCESS {'greeting': 'Hello, Ada!'}"
