import { randomBytes } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import { RegistryService } from "@toolmesh/proto";
import {
  eventually,
  type OneService,
  type ServiceProcess,
  startOneService,
  startService,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReferenceHub } from "./reference-hub.js";

const HUB_TOKEN = randomBytes(16).toString("hex");

const spec = (name: string, description: string, category = "data") => ({
  name,
  description,
  category,
  inputSchema: { type: "object", properties: { q: { type: "string" } } },
  runtime: { kind: { case: "grpc" as const, value: { address: "127.0.0.1:7200" } } },
});

describe("knowhub-sync", () => {
  let registry: OneService;
  let sync: ServiceProcess | undefined;
  let hub: ReferenceHub;
  let client: Client<typeof RegistryService>;
  let admin: { headers: { authorization: string } };
  let serviceToken: string;

  const startSync = async () => {
    sync = await startService(
      "knowhub-sync",
      {
        NATS_URL: registry.nats.url,
        TOOLMESH_KNOWHUB_URL: hub.url,
        TOOLMESH_KNOWHUB_TOKEN: HUB_TOKEN,
        TOOLMESH_REGISTRY_URL: registry.url,
        TOOLMESH_SERVICE_TOKEN: serviceToken,
      },
      { readyPattern: '"msg":"ready"' },
    );
  };
  const slugsOf = async (name: string) =>
    (await client.getTool({ name }, admin)).tool?.spec?.knowhubSlugs ?? [];
  const waitForSlugs = (name: string, expected: string[]) =>
    eventually(
      async () => expect(await slugsOf(name)).toEqual(expected),
      20_000,
      `${name}'s slugs`,
    );

  beforeAll(async () => {
    registry = await startOneService("registry");
    client = registry.client(RegistryService);
    admin = await registry.bearer("ops", ["admin"]);
    serviceToken = await registry.token("knowhub-sync", ["knowhub"]);
    hub = new ReferenceHub(
      [
        { slug: "data-query", name: "Data query", keywords: [] },
        { slug: "sql-guide", name: "SQL guide", keywords: ["sql", "read only"] },
        { slug: "weather", name: "Weather", keywords: ["forecast"] },
        { slug: "unrelated", name: "Cooking", keywords: ["recipe"] },
      ],
      HUB_TOKEN,
    );
    await hub.start();
  });

  afterAll(async () => {
    await sync?.stop();
    await hub?.stop();
    await registry?.stop();
  });

  it("links a registered tool by slug, name and keywords and stores its slugs", async () => {
    await client.registerTool({ tool: spec("data.query", "Runs a read-only SQL query.") }, admin);
    await client.putGroup({ group: { name: "analytics", tools: ["data.query"] } }, admin);
    await startSync();
    await hub.waitFor(
      () =>
        hub.link("data-query", "data.query")?.groups.includes("analytics") === true &&
        hub.link("sql-guide", "data.query") !== undefined,
    );
    expect(hub.link("data-query", "data.query")).toMatchObject({
      status: "connected",
      groups: ["analytics"],
    });
    expect(hub.link("weather", "data.query")).toBeUndefined();
    expect(hub.link("unrelated", "data.query")).toBeUndefined();
    await waitForSlugs("data.query", ["data-query", "sql-guide"]);
  });

  it("retries while the hub is down and loses no update", async () => {
    await hub.stop();
    await client.registerTool(
      { tool: spec("weather.now", "Gives the forecast for a city.", "weather") },
      admin,
    );
    await (sync as ServiceProcess).stdout.waitFor(
      (l) => l.includes("knowledge-hub sync failed; retrying"),
      20_000,
      "a retry",
    );
    await hub.start();
    await hub.waitFor(() => hub.link("weather", "weather.now") !== undefined);
    await waitForSlugs("weather.now", ["weather"]);
  });

  it("catches up after a restart: links of a deleted tool are removed", async () => {
    await (sync as ServiceProcess).stop();
    await client.putGroup({ group: { name: "analytics", tools: [] } }, admin);
    await client.deregisterTool({ name: "data.query" }, admin);
    await startSync();
    await hub.waitFor(
      () => !hub.link("data-query", "data.query") && !hub.link("sql-guide", "data.query"),
    );
    expect(hub.link("weather", "weather.now")).toBeDefined();
    const lines = [
      ...(sync as ServiceProcess).stdout.lines,
      ...(sync as ServiceProcess).stderr.lines,
    ];
    expect(lines.some((l) => l.includes(HUB_TOKEN))).toBe(false);
  });

  it("idles with a log line when no hub is configured", async () => {
    const idle = await startService(
      "knowhub-sync",
      { NATS_URL: registry.nats.url },
      { readyPattern: '"msg":"ready"' },
    );
    try {
      expect(idle.stdout.lines.some((l) => l.includes("knowhub sync disabled"))).toBe(true);
    } finally {
      expect(await idle.stop()).toBe(0);
    }
  });
});
