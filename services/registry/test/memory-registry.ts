import type { MessageInitShape } from "@bufbuild/protobuf";
import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { authInterceptor, principal } from "@toolmesh/auth";
import { Code, ConnectError } from "@toolmesh/errors";
import { createLogger } from "@toolmesh/log";
import { RegistryService, type ToolSpecSchema, ToolStatus } from "@toolmesh/proto";
import { ValidatorCache } from "@toolmesh/schema";
import { as } from "@toolmesh/testkit";
import { RecordedEvents } from "../src/events.js";
import { createRegistryHandlers } from "../src/handlers.js";
import { MemoryRegistryStore } from "../src/memory-store.js";
import { denyAll, type ToolVisibility } from "../src/visibility.js";

export type Spec = MessageInitShape<typeof ToolSpecSchema>;

/** A valid spec; tests override one field at a time. */
export function spec(name: string, overrides: Record<string, unknown> = {}): Spec {
  return {
    name,
    description: `The ${name} tool`,
    category: "data",
    inputSchema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
    requiredScopes: ["read:data"],
    runtime: { kind: { case: "grpc", value: { address: "127.0.0.1:7200" } } },
    ...overrides,
  } as Spec;
}

/** The principals behind the test's bearer tokens, which are their names. */
const tokens: Record<string, ReturnType<typeof principal>> = {
  admin: principal("ops", ["admin"]),
  service: principal("dispatcher", ["service"]),
  agent: principal("agent-7", ["agent"], "user-1"),
  toolAgent: principal("toolmesh-tool-agent", ["tool-agent"]),
};
export const admin = as("admin");
export const service = as("service");
export const agent = as("agent");
export const toolAgent = as("toolAgent");

/**
 * The Registry's handlers over an in-memory store, recorded events and a visibility rule, behind
 * the auth interceptor, reached through an in-memory transport.
 */
export function setup(visibility: ToolVisibility = denyAll) {
  const store = new MemoryRegistryStore();
  const events = new RecordedEvents();
  const shutdown = new AbortController();
  const transport = createRouterTransport(
    (router) => {
      router.service(
        RegistryService,
        createRegistryHandlers({
          store,
          events,
          visibility,
          validators: new ValidatorCache(),
          log: createLogger("test", "silent"),
          shutdownSignal: shutdown.signal,
        }),
      );
    },
    {
      router: {
        interceptors: [
          authInterceptor(async (token) => {
            const p = tokens[token];
            if (!p) throw new ConnectError("bearer token rejected", Code.Unauthenticated);
            return p;
          }),
        ],
      },
    },
  );
  return { store, events, shutdown, client: createClient(RegistryService, transport) };
}

/**
 * Four tools of three runtimes and statuses (data.query, data.export deprecated, search.web
 * remote, code.run local and disabled) and the group research, for the listing and export tests.
 */
export async function registerCatalog(c: Client<typeof RegistryService>): Promise<void> {
  await c.registerTool(
    { tool: spec("data.query", { description: "Run SQL against the warehouse" }) },
    admin,
  );
  await c.registerTool({ tool: spec("data.export", { status: ToolStatus.DEPRECATED }) }, admin);
  await c.registerTool(
    {
      tool: spec("search.web", {
        category: "search",
        runtime: { kind: { case: "remote", value: { url: "https://s.example/q" } } },
      }),
    },
    admin,
  );
  await c.registerTool(
    {
      tool: spec("code.run", {
        category: "code",
        status: ToolStatus.DISABLED,
        runtime: { kind: { case: "local", value: { command: "python3" } } },
      }),
    },
    admin,
  );
  await c.putGroup({ group: { name: "research", tools: ["search.web", "data.query"] } }, admin);
}
