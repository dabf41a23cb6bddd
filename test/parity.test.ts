import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { type JsonObject, toJson } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Code, ConnectError } from "@toolmesh/errors";
import {
  CallErrorSchema,
  CallStatus,
  DispatcherService,
  type DispatchResponse,
  isFinal,
  PermissionDenialSchema,
  RegistryService,
  SchemaFormat,
  statusName,
  statusWord,
  ToolNotFoundSchema,
  ValidationFailureSchema,
} from "@toolmesh/proto";
import {
  chainServices,
  LineWatcher,
  repoRoot,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The shared parity vectors run with the TypeScript (connect-node, gRPC) client; the Python and
// Go clients run the same file against the same kind of stack (libs/python, libs/go).
interface Expect {
  status?: string;
  output?: JsonObject;
  error?: { code?: string; message?: string };
  trace_id?: string;
  attempts?: number;
  refusal_code?: string;
  code?: string;
  violation_paths?: string[];
  missing_scopes?: string[];
  available_tools_include?: string[];
  results?: Expect[];
  tools?: string[];
  definitions?: JsonObject[];
}
interface Case {
  name: string;
  op: "dispatch" | "batch" | "list_tools" | "export";
  tool?: string;
  arguments?: JsonObject;
  token?: string;
  trace_id?: string;
  timeout_ms?: number;
  calls?: { tool: string; arguments: JsonObject }[];
  keyword?: string;
  format?: string;
  names?: string[];
  expect: Expect;
}
const vectors = JSON.parse(
  readFileSync(path.join(repoRoot, "test/vectors/cases.json"), "utf8"),
) as { agent: { sub: string; roles: string[] }; cases: Case[] };

const codeName = (code: Code) => Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();

const outcomeWords = JSON.parse(
  readFileSync(path.join(repoRoot, "test/vectors/outcome-words.json"), "utf8"),
) as { statuses: { status: keyof typeof CallStatus; word: string; final: boolean }[] };

// The Python and Go clients check their own copies of these against the same file.
describe("outcome words (shared vectors)", () => {
  it("names every status of the contract", () => {
    const named = outcomeWords.statuses.map((s) => CallStatus[s.status]).sort();
    const contract = Object.values(CallStatus).filter((v) => typeof v === "number");
    expect(named).toEqual(contract.sort());
  });

  for (const s of outcomeWords.statuses) {
    it(`${s.status} is ${s.final ? "final" : "not final"} and spelt ${s.word}`, () => {
      const status = CallStatus[s.status];
      expect(isFinal(status)).toBe(s.final);
      expect(statusName(status)).toBe(s.status);
      expect(statusWord(status)).toBe(s.word);
    });
  }
});

describe("parity vectors (TypeScript client)", () => {
  let stack: TestStack;
  let setup: ChildProcess | undefined;
  let agentToken: string;
  const addr: Record<string, string> = {};

  beforeAll(async () => {
    stack = await startStack();
    for (const name of chainServices) addr[name] = stack.service(name).url;
    agentToken = await stack.agentToken(vectors.agent.sub, { roles: vectors.agent.roles });
    const child = spawn(
      process.execPath,
      ["--import", "tsx", path.join(repoRoot, "test/vectors/setup.ts")],
      {
        cwd: repoRoot,
        env: {
          ...process.env,
          TOOLMESH_REGISTRY_URL: addr.registry,
          TOOLMESH_PERMISSION_URL: addr.permission,
          TOOLMESH_DISPATCHER_URL: addr.dispatcher,
          TOOLMESH_ADMIN_TOKEN: stack.adminToken,
          TOOLMESH_VECTOR_AGENT_TOKEN: agentToken,
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    setup = child;
    const out = new LineWatcher(child.stdout as NonNullable<typeof child.stdout>);
    const err = new LineWatcher(child.stderr as NonNullable<typeof child.stderr>);
    await out
      .waitFor((l) => l.includes('"ready":true'), 60_000, "test/vectors/setup.ts")
      .catch((error: Error) => {
        throw new Error(`${error.message}\n${err.tail()}`);
      });
  });

  afterAll(async () => {
    if (setup && setup.exitCode === null) {
      const exited = new Promise((resolve) => setup?.once("exit", resolve));
      setup.kill("SIGTERM");
      await exited;
    }
    await stack?.stop();
  });

  const run = async (c: Case): Promise<unknown> => {
    const headers = { authorization: `Bearer ${c.token ?? agentToken}` };
    if (c.op === "list_tools") {
      const registry = createClient(
        RegistryService,
        createGrpcTransport({ baseUrl: addr.registry as string }),
      );
      const res = await registry.listTools(
        { keyword: c.keyword ?? "", pageSize: 500 },
        { headers },
      );
      return res.tools.map((t) => t.spec?.name ?? "").sort();
    }
    if (c.op === "export") {
      const registry = createClient(
        RegistryService,
        createGrpcTransport({ baseUrl: addr.registry as string }),
      );
      const format = SchemaFormat[(c.format ?? "").toUpperCase() as keyof typeof SchemaFormat];
      const res = await registry.exportToolSchemas({ format, names: c.names ?? [] }, { headers });
      return res.tools.map((t) => t.definition);
    }
    const dispatcher = createClient(
      DispatcherService,
      createGrpcTransport({ baseUrl: addr.dispatcher as string }),
    );
    if (c.op === "batch") {
      const res = await dispatcher.dispatchBatch(
        { calls: (c.calls ?? []).map((call) => ({ tool: call.tool, arguments: call.arguments })) },
        { headers },
      );
      return res.results;
    }
    return dispatcher.dispatch(
      {
        tool: c.tool ?? "",
        arguments: c.arguments ?? {},
        context: { traceId: c.trace_id ?? "" },
        timeoutMs: c.timeout_ms ?? 0,
      },
      { headers, timeoutMs: (c.timeout_ms ?? 30_000) + 2000 },
    );
  };

  const checkResult = (got: DispatchResponse, want: Expect) => {
    expect(statusName(got.status)).toBe(want.status);
    if (want.output) expect(got.output).toEqual(want.output);
    if (want.error)
      expect(toJson(CallErrorSchema, got.error ?? ({} as never))).toMatchObject(want.error);
    if (want.trace_id) expect(got.traceId).toBe(want.trace_id);
    if (want.attempts) expect(got.attempts).toBe(want.attempts);
    if (want.refusal_code) expect(got.refusalCode).toBe(want.refusal_code);
  };

  for (const c of vectors.cases) {
    it(c.name, async () => {
      let got: unknown;
      try {
        got = await run(c);
      } catch (error) {
        const e = ConnectError.from(error);
        expect(c.expect.code, `unexpected ${e.message}`).toBeDefined();
        expect(codeName(e.code)).toBe(c.expect.code);
        if (c.expect.violation_paths) {
          const [failure] = e.findDetails(ValidationFailureSchema);
          expect(failure?.violations.map((v) => v.path).sort()).toEqual(
            [...c.expect.violation_paths].sort(),
          );
        }
        if (c.expect.missing_scopes) {
          const [denial] = e.findDetails(PermissionDenialSchema);
          expect(denial?.missingScopes).toEqual(c.expect.missing_scopes);
        }
        if (c.expect.available_tools_include) {
          const [missing] = e.findDetails(ToolNotFoundSchema);
          expect(missing?.availableTools).toEqual(
            expect.arrayContaining(c.expect.available_tools_include),
          );
        }
        return;
      }
      expect(c.expect.code, `expected ${c.expect.code}`).toBeUndefined();
      if (c.expect.results) {
        const results = got as DispatchResponse[];
        expect(results).toHaveLength(c.expect.results.length);
        for (const [i, want] of c.expect.results.entries()) {
          checkResult(results[i] as DispatchResponse, want);
        }
      } else if (c.expect.tools) expect(got).toEqual(c.expect.tools);
      else if (c.expect.definitions) expect(got).toEqual(c.expect.definitions);
      else checkResult(got as DispatchResponse, c.expect);
    });
  }
});
