import { Code } from "@toolmesh/errors";
import { SecretHolderKind, SecretToolKind } from "@toolmesh/proto";
import { as, failure } from "@toolmesh/testkit";
import { describe, expect, it } from "vitest";
import { expectBadField, permissionHandlers } from "./permission-handlers.js";

const everyone = {
  toolKind: SecretToolKind.GLOB,
  tool: "github.*",
  holderKind: SecretHolderKind.EVERYONE,
  holder: "",
};

// PutSecret, DeleteSecret and ListSecrets over an in-memory store and vault.
describe("secret handlers", () => {
  it("puts a secret sealed, bumps its version on a new value, and never gives the value back", async () => {
    const p = await permissionHandlers();
    const put = (value: string) =>
      p.client.putSecret({ name: "github-token", scope: everyone, value }, p.admin);
    const first = await put("ghp_first-value");
    const second = await put("ghp_second-value");
    expect(second.secret?.id).toBe(first.secret?.id);
    expect(second.secret?.version).toBe(2n);
    const listed = await p.client.listSecrets({}, p.admin);
    expect(listed.secrets.map((s) => s.name)).toEqual(["github-token"]);
    const everything = JSON.stringify(
      [...p.sealed.entries.values()].map((e) => Buffer.from(e.value).toString("latin1")),
    );
    expect(everything).not.toContain("ghp_second-value");
    expect(p.events.changes.map((c) => c.change.reason).join("\n")).not.toContain("ghp_");
    await p.client.deleteSecret({ id: first.secret?.id ?? "" }, p.admin);
    expect((await p.client.listSecrets({}, p.admin)).secrets).toEqual([]);
    expect(p.sealed.entries.size).toBe(1); // the key check alone
  });

  it("lets a caller acting for a user manage that user's secrets only", async () => {
    const p = await permissionHandlers();
    const alice = as(await p.jwt({ sub: "bot", roles: ["agent"], onBehalfOf: "alice" }));
    const own = { ...everyone, holderKind: SecretHolderKind.USER, holder: "alice" };
    await p.client.putSecret({ name: "github-token", scope: own, value: "mine" }, alice);
    const others = await failure(
      p.client.putSecret(
        { name: "github-token", scope: { ...own, holder: "bob" }, value: "theirs" },
        alice,
      ),
    );
    expect(others.code).toBe(Code.PermissionDenied);
    expect(others.rawMessage).toContain(
      'secrets scoped to that user only (holder_kind USER, holder "alice")',
    );
    const shared = await failure(
      p.client.putSecret({ name: "github-token", scope: everyone, value: "x" }, alice),
    );
    expect(shared.code).toBe(Code.PermissionDenied);
    await p.client.putSecret({ name: "other", scope: everyone, value: "admin's" }, p.admin);
    expect((await p.client.listSecrets({}, alice)).secrets.map((s) => s.scope?.holder)).toEqual([
      "alice",
    ]);
    const agentOnly = await failure(p.client.listSecrets({}, as(p.tokens.agent)));
    expect(agentOnly.code).toBe(Code.PermissionDenied);
  });

  it("refuses bad names, scopes and values with the field to fix", async () => {
    const p = await permissionHandlers();
    const bad = (req: Parameters<typeof p.client.putSecret>[0]) =>
      failure(p.client.putSecret(req, p.admin));
    expectBadField(
      await bad({ name: "github-token", scope: everyone, value: "" }),
      "value: must not be empty (DeleteSecret removes a secret)",
    );
    expectBadField(
      await bad({ name: "github-token", value: "v" }),
      "scope: is required: which tools, and whose calls",
    );
    expectBadField(
      await bad({
        name: "github-token",
        scope: { ...everyone, toolKind: SecretToolKind.RUNTIME, tool: "ftp" },
        value: "v",
      }),
      "scope.tool: must be a runtime kind: grpc, local, remote, docker, mcp",
    );
    expectBadField(
      await bad({ name: "github-token", scope: { ...everyone, holder: "x" }, value: "v" }),
      "scope.holder: must be empty for EVERYONE",
    );
    const big = await bad({ name: "github-token", scope: everyone, value: "x".repeat(70_000) });
    expectBadField(big, "value: is 70000 bytes; at most 65536 allowed");
    expect((await failure(p.client.deleteSecret({ id: "nope" }, p.admin))).code).toBe(
      Code.InvalidArgument,
    );
    expect((await failure(p.client.deleteSecret({ id: "a".repeat(24) }, p.admin))).code).toBe(
      Code.NotFound,
    );
  });
});
