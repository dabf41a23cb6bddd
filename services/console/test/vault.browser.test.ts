import { mkdir } from "node:fs/promises";
import path from "node:path";
import { SecretHolderKind, SecretToolKind } from "@toolmesh/proto";
import {
  connectAs,
  type OperatorStack,
  type ProtectedTool,
  putTestProvider,
  repoRoot,
  startOAuthServer,
  startOperatorStack,
  startProtectedTool,
  type TestOAuthServer,
} from "@toolmesh/testkit";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser, type TestBrowser } from "./browser.js";

const artifacts = path.join(repoRoot, "test-artifacts", "console");

// The console's vault page in a real browser against the whole stack and a real authorization
// server (oidc-provider): secrets listed without values, a user's account connected from the link
// the page makes, then the connection revoked from the page.
describe("console: secrets and connections", () => {
  let op: OperatorStack;
  let as: TestOAuthServer;
  let tool: ProtectedTool;
  let browser: TestBrowser;
  let page: Page;
  const planted = `console-${Math.random().toString(36).slice(2)}-${Date.now()}`;
  const admin = () => op.stack.as(op.adminToken);
  const consoleUrl = () => `http://127.0.0.1:${op.env.TOOLMESH_CONSOLE_PORT}`;
  const shot = (name: string) =>
    page.screenshot({ path: path.join(artifacts, `${name}.png`), fullPage: true });

  beforeAll(async () => {
    await mkdir(artifacts, { recursive: true });
    op = await startOperatorStack();
    const permission = op.stack.permissionClient;
    tool = await startProtectedTool(() => as.issuer);
    as = await startOAuthServer({
      redirectUri: `${op.stack.stackFile().services.permission?.url}/oauth/callback`,
      resource: tool.url,
      accessTokenTtlS: 300,
    });
    await putTestProvider(op.stack, "acme", as, tool.url);
    for (const version of [1, 2])
      await permission.putSecret(
        {
          name: "web-key",
          scope: {
            toolKind: SecretToolKind.GLOB,
            tool: "web.*",
            holderKind: SecretHolderKind.USER,
            holder: "alice",
          },
          value: `${planted}-${version}`,
          description: "the web tools' API key",
        },
        admin(),
      );
    browser = await launchBrowser();
    page = browser.page;
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await op?.stop();
    await as?.stop();
    await tool?.stop();
  });

  it("lists secrets by name, scope and version, never a value", async () => {
    await page.goto(consoleUrl());
    await page.fill('input[name="token"]', op.adminToken);
    await page.click('button[type="submit"]');
    await page.click("nav >> text=Secrets & connections");
    const row = page.locator('table.secrets tr[data-secret="web-key"]');
    await row.waitFor();
    const text = await row.textContent();
    for (const part of ["web-key", "glob:web.*", "user:alice", "the web tools' API key"])
      expect(text).toContain(part);
    expect(await row.locator(".version").textContent()).toBe("2");
    expect(await page.content()).not.toContain(planted);
    await shot("vault-1-secrets");
  });

  it("connects a user's account from the link the page makes, and revokes it", async () => {
    await page.fill('input[name="connectUser"]', "alice");
    await page.locator('table.providers tr[data-provider="acme"] button >> text=Connect').click();
    const link = await page.locator(".connect-link a").getAttribute("href");
    expect(link).toMatch(/\/oauth\/connect\?ticket=/);
    const done = await connectAs(link ?? "", "alice");
    expect(done.text).toContain("is connected to toolmesh for user alice");

    await page.reload();
    const connection = page.locator('table.connections tr[data-connection="acme/alice"]');
    await connection.waitFor();
    expect(await connection.textContent()).toContain("tools");
    await shot("vault-2-connected");

    await connection.locator("button >> text=Revoke").click();
    await connection.waitFor({ state: "detached" });
    const { connections } = await op.stack.permissionClient.listConnections({}, admin());
    expect(connections).toEqual([]);
    expect(as.revoked.length).toBeGreaterThan(0);
    await shot("vault-3-revoked");
  });
});
