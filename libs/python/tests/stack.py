"""A real toolmesh stack for tests, started the way every toolmesh test starts one.

`node --import tsx scripts/stack.ts --json` (the shared TypeScript harness, @toolmesh/testkit)
starts nats-server and every service on free ports with a temp data dir and prints one JSON line:
addresses, and tokens minted with the stack's own random JWT secret for the principals a test
names. It stops everything when its stdin closes.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


class _Lines:
    """Collects a process's output lines and lets a caller wait for one."""

    def __init__(self, stream, keep: int = 300):
        self.lines: list[str] = []
        self._keep = keep
        self._new: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream) -> None:
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.lines.append(line)
            del self.lines[: -self._keep]
            self._new.put(line)
        self._new.put("\0eof")

    def wait_for(self, test, timeout: float) -> str | None:
        end = time.monotonic() + timeout
        while True:
            remaining = end - time.monotonic()
            if remaining <= 0:
                return None
            try:
                line = self._new.get(timeout=remaining)
            except queue.Empty:
                return None
            if line == "\0eof":
                return None
            if test(line):
                return line

    def tail(self, n: int = 30) -> str:
        return "\n".join(self.lines[-n:])


@dataclass
class Stack:
    nats_url: str
    nats_agent_nkey_file: str
    data_dir: Path
    ports: dict[str, int] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    admin_token: str = ""
    tokens: dict[str, str] = field(default_factory=dict)
    _proc: subprocess.Popen | None = None
    _output: _Lines | None = None

    def address(self, service: str) -> str:
        if service not in self.ports:
            raise KeyError(f"the test stack runs no {service}; it runs {', '.join(sorted(self.ports))}")
        return f"127.0.0.1:{self.ports[service]}"

    def token(self, name: str) -> str:
        """The JWT the stack minted for a principal named in start_stack(principals)."""
        if name not in self.tokens:
            raise KeyError(f"no token named {name}; start_stack minted {', '.join(sorted(self.tokens))}")
        return self.tokens[name]

    def client_kwargs(self) -> dict[str, str]:
        """Addresses of the Registry, Permission and Callback services for toolmesh.Toolmesh(...)."""
        return {name: self.address(name) for name in ("registry", "permission", "callback")}

    def kill(self, process: str) -> None:
        """SIGKILL to one process of the stack (dispatcher-2 …), as a crash would; not restarted."""
        os.kill(self.pids[process], signal.SIGKILL)

    def logs(self, service: str) -> str:
        log = self.data_dir / "logs" / f"{service}.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        return f"--- {service}\n" + "\n".join(text.splitlines()[-30:])

    def stop(self) -> None:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        # Closing stdin asks scripts/stack.ts to stop every process it started.
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.terminate()
            proc.wait(timeout=10)


def start_stack(principals: dict[str, dict]) -> Stack:
    """Starts the shared test stack and returns its addresses, and a token for each principal
    (name → {"sub", "roles", "onBehalfOf"}) minted with the stack's own secret."""
    proc = subprocess.Popen(
        # A second Dispatcher, dispatcher-2, for the client's failover.
        # A scripted model for the tool agent, echoing each message (chat()).
        ["node", "--import", "tsx", str(REPO / "scripts" / "stack.ts"), "--json", "--dispatchers", "2", "--model-echo"]
        + ["--tokens", json.dumps(principals)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = _Lines(proc.stdout), _Lines(proc.stderr)
    line = out.wait_for(lambda l: l.startswith("{"), 120)
    if line is None:
        proc.kill()
        proc.wait()
        raise RuntimeError(f"scripts/stack.ts did not start a stack:\n{out.tail()}\n{err.tail()}")
    info = json.loads(line)
    return Stack(
        nats_url=info["natsUrl"],
        nats_agent_nkey_file=info["natsAgentNkeyFile"],
        data_dir=Path(info["dataDir"]),
        ports={name: s["port"] for name, s in info["services"].items() if s["port"]},
        pids={name: s["pid"] for name, s in info["services"].items()},
        admin_token=info["adminToken"],
        tokens=info["tokens"],
        _proc=proc,
        _output=err,
    )
