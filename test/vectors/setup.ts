// Serves and registers the parity-vector tools (vec.*) and grants them to the vector agent, then
// waits until the Dispatcher runs vec.echo and prints one JSON line {"ready": true, ...}. Every
// parity runner (TypeScript, Python, Go) starts this against its stack, so all three call the
// same backend. Env: TOOLMESH_REGISTRY_URL, TOOLMESH_PERMISSION_URL, TOOLMESH_DISPATCHER_URL,
// TOOLMESH_ADMIN_TOKEN, TOOLMESH_VECTOR_AGENT_TOKEN. Stops on SIGTERM.

import { readFileSync } from "node:fs";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Code } from "@toolmesh/errors";
import {
  CallStatus,
  DispatcherService,
  Effect,
  PermissionService,
  PrincipalKind,
  ResourceKind,
} from "@toolmesh/proto";
import { defineTool, serveTools, ToolError } from "@toolmesh/sdk";
import { retryWhile } from "@toolmesh/testkit";

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const vectors = JSON.parse(readFileSync(new URL("./cases.json", import.meta.url), "utf8")) as {
  agent: { sub: string };
};

const tools = [
  defineTool({
    name: "vec.echo",
    description: "Repeats text the given number of times.",
    inputSchema: {
      type: "object",
      properties: {
        text: { type: "string", minLength: 1 },
        times: { type: "integer", minimum: 1 },
      },
      required: ["text"],
      additionalProperties: false,
    },
    requiredScopes: ["read:data"],
    idempotent: true,
    handler: (args: { text: string; times?: number }) => ({
      text: args.text.repeat(args.times ?? 1),
    }),
  }),
  defineTool({
    name: "vec.add",
    description: "Adds two numbers.",
    inputSchema: {
      type: "object",
      properties: { a: { type: "number" }, b: { type: "number" } },
      required: ["a", "b"],
    },
    requiredScopes: ["read:data"],
    handler: (args: { a: number; b: number }) => ({
      sum: args.a + args.b,
      parts: [args.a, args.b],
      nested: { ok: true, none: null },
    }),
  }),
  defineTool({
    name: "vec.fail",
    description: "Always fails with the code out_of_stock.",
    inputSchema: { type: "object" },
    requiredScopes: ["read:data"],
    handler: () => {
      throw new ToolError("out_of_stock", "no widgets left; try again tomorrow", { sku: "w-1" });
    },
  }),
  defineTool({
    name: "vec.slow",
    description: "Waits the given milliseconds unless the call is interrupted.",
    inputSchema: { type: "object", properties: { ms: { type: "integer" } }, required: ["ms"] },
    requiredScopes: ["read:data"],
    handler: (args: { ms: number }, ctx) =>
      new Promise((resolve) => {
        const timer = setTimeout(() => resolve({ slept: args.ms }), args.ms);
        ctx.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          resolve({ slept: 0 });
        });
      }),
  }),
  defineTool({
    name: "vec.secret",
    description: "Needs a scope the vector agent is never granted.",
    inputSchema: { type: "object" },
    requiredScopes: ["write:secret"],
    handler: () => ({ secret: "never returned" }),
  }),
];

const adminToken = env("TOOLMESH_ADMIN_TOKEN");
const served = await serveTools(tools, {
  registry: { url: env("TOOLMESH_REGISTRY_URL"), token: adminToken },
});

const permission = createClient(
  PermissionService,
  createGrpcTransport({ baseUrl: env("TOOLMESH_PERMISSION_URL") }),
);
await permission.grant(
  {
    grant: {
      principal: { kind: PrincipalKind.AGENT, id: vectors.agent.sub },
      resource: { kind: ResourceKind.GLOB, pattern: "vec.**" },
      scopes: ["read:data"],
      effect: Effect.ALLOW,
      enabled: true,
      description: "parity vectors",
    },
  },
  { headers: { authorization: `Bearer ${adminToken}` } },
);

// Grants and tools reach the Dispatcher through NATS watches; wait until a call goes through.
const dispatcher = createClient(
  DispatcherService,
  createGrpcTransport({ baseUrl: env("TOOLMESH_DISPATCHER_URL") }),
);
const headers = { authorization: `Bearer ${env("TOOLMESH_VECTOR_AGENT_TOKEN")}` };
const ready = await retryWhile(
  () => dispatcher.dispatch({ tool: "vec.echo", arguments: { text: "ready" } }, { headers }),
  [Code.NotFound, Code.PermissionDenied, Code.Unavailable],
  20_000,
  "the dispatcher running vec.echo",
);
if (ready.status !== CallStatus.SUCCESS) {
  throw new Error(`vec.echo answered ${CallStatus[ready.status]}: ${ready.error?.message}`);
}

process.stdout.write(`${JSON.stringify({ ready: true, address: served.address })}\n`);
process.once("SIGTERM", () => {
  served.close().then(() => process.exit(0));
});
