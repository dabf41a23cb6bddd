"""A real toolmesh stack for tests: nats-server and the service processes that exist.

Each service runs as `node --import tsx services/<name>/src/main.ts` with NATS_URL,
TOOLMESH_<NAME>_PORT=0 and a temp TOOLMESH_DATA_DIR; its port comes from the JSON log line
whose msg starts with "listening". Services not built yet are absent, and tests that need
them skip naming the missing service.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SERVICES = ("permission", "registry", "audit", "callback", "dispatcher")
JWT_SECRET = "python-tests-jwt-secret-at-least-32-bytes-long!"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    data_dir: Path
    ports: dict[str, int] = field(default_factory=dict)
    admin_token: str = ""
    _procs: list[subprocess.Popen] = field(default_factory=list)
    _logs: dict[str, tuple[_Lines, _Lines]] = field(default_factory=dict)

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

    def logs(self, service: str) -> str:
        out, err = self._logs[service]
        return f"--- {service} stdout\n{out.tail()}\n--- {service} stderr\n{err.tail()}"

    def stop(self) -> None:
        for proc in reversed(self._procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in reversed(self._procs):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def start_stack(root: Path) -> Stack:
    nats_port = free_port()
    store = root / "nats"
    data = root / "data"
    store.mkdir()
    data.mkdir()
    nats = subprocess.Popen(
        [os.environ.get("NATS_SERVER_BIN", "nats-server"), "-a", "127.0.0.1", "-p", str(nats_port), "-js", "-sd", str(store)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    stack = Stack(nats_url=f"nats://127.0.0.1:{nats_port}", data_dir=data)
    stack._procs.append(nats)
    nats_err = _Lines(nats.stderr)
    if not nats_err.wait_for(lambda l: "Server is ready" in l, 20):
        stack.stop()
        raise RuntimeError(f"nats-server did not start:\n{nats_err.tail()}")

    try:
        for name in SERVICES:
            entry = REPO / "services" / name / "src" / "main.ts"
            if entry.exists():
                stack.ports[name] = _start_service(stack, name, entry)
        stack.admin_token = _admin_token(stack)
    except BaseException:
        stack.stop()
        raise
    return stack


def _start_service(stack: Stack, name: str, entry: Path) -> int:
    env = {
        **os.environ,
        "NATS_URL": stack.nats_url,
        f"TOOLMESH_{name.upper()}_PORT": "0",
        "TOOLMESH_DATA_DIR": str(stack.data_dir),
        "TOOLMESH_JWT_SECRET": JWT_SECRET,
        "LOG_LEVEL": "info",
    }
    proc = subprocess.Popen(
        ["node", "--import", "tsx", str(entry)], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    stack._procs.append(proc)
    out, err = _Lines(proc.stdout), _Lines(proc.stderr)
    stack._logs[name] = (out, err)

    def listening(line: str) -> bool:
        try:
            record = json.loads(line)
        except ValueError:
            return False
        return isinstance(record, dict) and str(record.get("msg", "")).startswith("listening")

    line = out.wait_for(listening, 60)
    if line is None:
        raise RuntimeError(f"{name} did not report listening:\n{stack.logs(name)}")
    return int(json.loads(line)["port"])


def _admin_token(stack: Stack) -> str:
    """The bootstrap admin token the Permission service writes, else a minted admin JWT."""
    token_file = stack.data_dir / "admin.token"
    if stack.has("permission"):
        end = time.monotonic() + 20
        while time.monotonic() < end:
            if token_file.exists() and token_file.read_text().strip():
                return token_file.read_text().strip()
            time.sleep(0.1)
        raise RuntimeError(f"permission service wrote no {token_file}:\n{stack.logs('permission')}")
    return mint_jwt("admin-py", ["admin"])


def make_stack_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="toolmesh-py-"))


def remove_stack_dir(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
