"""A real toolmesh stack for tests, started the way every toolmesh test starts one.

`node --import tsx scripts/stack.ts --json` (the shared TypeScript harness, @toolmesh/testkit)
starts nats-server and every service on free ports with a temp data dir and prints one JSON line:
addresses, tokens and the JWT secret. It stops everything when its stdin closes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import queue
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
JWT_SECRET = "python-tests-jwt-secret-at-least-32-bytes-long!"


def mint_jwt(sub: str, roles: list[str], on_behalf_of: str = "", ttl: int = 3600) -> str:
    """An HS256 JWT as the services verify it (iss/aud toolmesh, claim roles, on_behalf_of)."""

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    now = int(time.time())
    claims = {"iss": "toolmesh", "aud": "toolmesh", "sub": sub, "roles": roles, "iat": now, "exp": now + ttl}
    if on_behalf_of:
        claims["on_behalf_of"] = on_behalf_of
    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64(json.dumps(claims).encode())
    sig = hmac.new(JWT_SECRET.encode(), f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(sig)}"


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
    _proc: subprocess.Popen | None = None
    _output: _Lines | None = None

    def has(self, service: str) -> bool:
        return service in self.ports

    def address(self, service: str) -> str:
        if service not in self.ports:
            pytest.skip(f"services/{service}/src/main.ts does not exist yet, so this test cannot run")
        return f"127.0.0.1:{self.ports[service]}"

    def require(self, *services: str) -> None:
        for name in services:
            self.address(name)

    def client_kwargs(self) -> dict[str, str]:
        """Addresses for toolmesh.Toolmesh(...) of every running service."""
        out = {}
        for name in ("registry", "permission", "callback"):
            if name in self.ports:
                out[name] = self.address(name)
        return out

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


def start_stack() -> Stack:
    """Starts the shared test stack and returns its addresses and tokens."""
    proc = subprocess.Popen(
        # A second Dispatcher, dispatcher-2, for the client's failover.
        ["node", "--import", "tsx", str(REPO / "scripts" / "stack.ts"), "--json", "--dispatchers", "2"],
        cwd=REPO,
        env={**os.environ, "TOOLMESH_JWT_SECRET": JWT_SECRET},
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
        _proc=proc,
        _output=err,
    )
