import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code } from "@toolmesh/errors";
import {
  ApprovalDecision,
  AuditAction,
  CallStatus,
  LocalProtocol,
  RuntimeState,
  SecretHolderKind,
  SecretToolKind,
  type ToolSpecSchema,
} from "@toolmesh/proto";
import {
  allowSpec,
  eventually,
  failure,
  putUsersSecret,
  secretsFound,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

// A local tool that tells what it was given, by hash only: its environment variable, the file in
// TOOLMESH_SECRETS_DIR, and that file's and directory's modes and owner.
const LOCAL_TOOL = `
const http = require("node:http"), fs = require("node:fs"), path = require("node:path");
const sha = (v) => require("node:crypto").createHash("sha256").update(v).digest("hex");
http.createServer((req, res) => {
  if (req.url === "/healthz") return void res.writeHead(200).end("ok");
  req.resume();
  req.on("end", () => {
    const dir = process.env.TOOLMESH_SECRETS_DIR ?? "";
    const file = path.join(dir, "api-token");
    const mode = (p) => (fs.statSync(p).mode & 0o777).toString(8);
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
      pid: process.pid,
      uid: process.getuid(),
      env_sha256: sha(process.env.API_TOKEN ?? ""),
      dir,
      files: fs.readdirSync(dir),
      dir_mode: mode(dir),
      file_mode: mode(file),
      file_uid: fs.statSync(file).uid,
      file_sha256: sha(fs.readFileSync(file, "utf8")),
    }));
  });
}).listen(Number(process.env.TOOLMESH_TOOL_PORT), "127.0.0.1");
`;

// The vault's secrets in the calls a user makes: a local tool's environment and files, each
// user's own, and a call held for approval that is refused (not failed) when its secret went away
// while it waited.
describe("vault secrets in local tools and held calls", () => {
  let stack: TestStack;
  let echo: http.Server;
  const received: string[] = [];
  const values = {
    alice: `alice-${randomBytes(12).toString("hex")}`,
    bob: `bob-${randomBytes(12).toString("hex")}`,
    held: `held-${randomBytes(12).toString("hex")}`,
  };
  const admin = () => stack.as(stack.adminToken);

  async function register(spec: MessageInitShape<typeof ToolSpecSchema> & { name: string }) {
    await stack.registryClient.registerTool(
      {
        tool: {
          description: "a tool of the vault calls test",
          inputSchema: { type: "object" },
          ...spec,
        },
      },
      admin(),
    );
  }

  async function call(tool: string, user: string) {
    const token = await stack.agentToken("bot", { onBehalfOf: user });
    return stack.dispatcherClient().dispatch({ tool, arguments: {} }, stack.as(token));
  }

  beforeAll(async () => {
    stack = await startStack();
    echo = http.createServer((req, res) => {
      req.resume();
      received.push(String(req.headers["x-api-key"] ?? ""));
      res.writeHead(200, { "content-type": "application/json" }).end('{"ran":true}');
    });
    await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
    const echoUrl = `http://127.0.0.1:${(echo.address() as AddressInfo).port}/`;

    await register({
      name: "vault.local",
      runtime: {
        kind: {
          case: "local",
          value: {
            command: process.execPath,
            args: ["-e", LOCAL_TOOL],
            protocol: LocalProtocol.HTTP,
          },
        },
      },
      secrets: [
        { secret: "local-token", target: { case: "env", value: "API_TOKEN" } },
        { secret: "local-token", target: { case: "file", value: "api-token" } },
      ],
    });
    for (const [name, requiresApproval] of [
      ["vault.held", true],
      ["vault.probe", false],
    ] as const)
      await register({
        name,
        requiresApproval,
        runtime: { kind: { case: "remote", value: { url: echoUrl, headers: {} } } },
        secrets: [{ secret: "held-key", target: { case: "header", value: "x-api-key" } }],
      });
    await putUsersSecret(stack, "local-token", "vault.local", {
      alice: values.alice,
      bob: values.bob,
    });
    await stack.grantAll("bot");
    await stack.permissionClient.grant({ grant: allowSpec("user:*", "glob:**", ["*"]) }, admin());
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
    echo?.close();
  });

  it("gives a local tool each user's own secret in its environment and in a file only its user reads", async () => {
    const alice = await eventually(
      () => call("vault.local", "alice"),
      5000,
      "the tool and secrets to reach the Dispatcher",
    );
    expect(alice.status).toBe(CallStatus.SUCCESS);
    const seen = alice.output as Record<string, unknown>;
    expect(seen).toMatchObject({
      env_sha256: sha256(values.alice),
      file_sha256: sha256(values.alice),
      files: ["api-token"],
      dir_mode: "500",
      file_mode: "400",
      file_uid: process.getuid?.(),
      uid: process.getuid?.(),
    });
    const dir = String(seen.dir);
    expect(dir).not.toBe("");
    // Another user of the machine can neither list the directory nor read the file.
    if (process.getuid?.() === 0) {
      const other = spawnSync(
        process.execPath,
        ["-e", `require("node:fs").readFileSync(${JSON.stringify(`${dir}/api-token`)})`],
        { uid: 65534, gid: 65534, encoding: "utf8" },
      );
      expect(other.status).not.toBe(0);
      expect(other.stderr).toContain("EACCES");
    }

    // Bob's call runs in a process of its own, with bob's value.
    const bob = await call("vault.local", "bob");
    expect(bob.output).toMatchObject({
      env_sha256: sha256(values.bob),
      file_sha256: sha256(values.bob),
    });
    expect((bob.output as Record<string, unknown>).pid).not.toBe(seen.pid);
    const again = await call("vault.local", "alice");
    expect((again.output as Record<string, unknown>).pid).toBe(seen.pid);

    // A carol without a secret of her own is refused before anything starts.
    const carol = await failure(call("vault.local", "carol"));
    expect(carol.code).toBe(Code.FailedPrecondition);
    expect(carol.rawMessage).toContain('needs secret "local-token"');

    // Stopping the tool stops every user's process and removes their secret files.
    const statuses = await stack
      .dispatcherClient()
      .getRuntimeStatus({ tool: "vault.local" }, admin());
    expect(statuses.runtimes).toHaveLength(2);
    const started = await failure(
      stack.dispatcherClient().startTool({ tool: "vault.local" }, admin()),
    );
    expect(started.code).toBe(Code.FailedPrecondition);
    await stack.dispatcherClient().stopTool({ tool: "vault.local" }, admin());
    expect(existsSync(dir)).toBe(false);
    const after = await stack.dispatcherClient().getRuntimeStatus({ tool: "vault.local" }, admin());
    expect(after.runtimes.map((r) => r.state)).toEqual([RuntimeState.STOPPED]);
  });

  it("runs an approved call with its secret, and refuses one whose secret was deleted while it waited", async () => {
    const { secret } = await stack.permissionClient.putSecret(
      {
        name: "held-key",
        scope: {
          toolKind: SecretToolKind.GLOB,
          tool: "vault.*",
          holderKind: SecretHolderKind.EVERYONE,
        },
        value: values.held,
      },
      admin(),
    );
    const approve = (callId: string) =>
      stack
        .dispatcherClient()
        .decideApproval({ callId, decision: ApprovalDecision.APPROVE }, admin());

    const first = await eventually(
      async () => {
        const res = await call("vault.held", "carol");
        expect(res.status).toBe(CallStatus.PENDING);
        return res;
      },
      5000,
      "the secret to reach the Dispatcher",
    );
    expect((await approve(first.callId)).result?.status).toBe(CallStatus.SUCCESS);
    expect(received).toEqual([values.held]);

    const second = await call("vault.held", "carol");
    expect(second.status).toBe(CallStatus.PENDING);
    await stack.permissionClient.deleteSecret({ id: secret?.id ?? "" }, admin());
    await eventually(
      async () =>
        expect((await failure(call("vault.probe", "carol"))).code).toBe(Code.FailedPrecondition),
      5000,
      "the deletion to reach the Dispatcher",
    );
    const decided = await approve(second.callId);
    expect(decided.result).toMatchObject({
      status: CallStatus.REFUSED,
      refusalCode: "FAILED_PRECONDITION",
      error: { code: "secret_missing" },
    });
    expect(decided.result?.error?.message).toContain('needs secret "held-key"');
    expect(received).toEqual([values.held]);
    const ended = await eventually(
      async () => {
        const { records } = await stack
          .auditClient()
          .queryRecords({ callId: second.callId, pageSize: 20 }, admin());
        const end = records.find((r) => r.action === AuditAction.TOOL_CALL);
        expect(end).toBeDefined();
        return end;
      },
      20_000,
      "the held call's end record",
    );
    expect(ended).toMatchObject({
      status: CallStatus.REFUSED,
      errorCode: "secret_missing",
      attempts: 0,
    });
  });

  it("no store or log holds a secret's bytes", async () => {
    expect(await secretsFound(Object.values(values), { dirs: [stack.dataDir] })).toEqual([]);
  });
});
