import { create } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import {
  type InvokeRequest,
  InvokeRequestSchema,
  type InvokeResponse,
  ToolBackendService,
  TraceEventKind,
} from "@toolmesh/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildQuery, dataQueryTool, openOrdersDatabase } from "../src/examples/index.js";
import { defineTool, grpcServiceDefinition, type ServedTools, serveTools } from "../src/index.js";
import { ToolError } from "../src/tool-error.js";

const invoke = grpcServiceDefinition(ToolBackendService).invoke as grpc.MethodDefinition<
  InvokeRequest,
  InvokeResponse
>;

function call(address: string, req: InvokeRequest): Promise<InvokeResponse[]> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  return new Promise((resolve, reject) => {
    const out: InvokeResponse[] = [];
    const stream = client.makeServerStreamRequest(
      invoke.path,
      invoke.requestSerialize,
      invoke.responseDeserialize,
      req,
      new grpc.Metadata(),
      {},
    );
    stream.on("data", (m: InvokeResponse) => out.push(m));
    stream.on("error", (e) => {
      client.close();
      reject(e);
    });
    stream.on("end", () => {
      client.close();
      resolve(out);
    });
  });
}

describe("tool SDK", () => {
  let served: ServedTools;
  beforeAll(async () => {
    const db = await openOrdersDatabase();
    served = await serveTools(
      [
        dataQueryTool(db),
        defineTool({
          name: "sdk.fail",
          description: "fails",
          inputSchema: { type: "object" },
          handler: () => {
            throw new ToolError("nope", "it failed on purpose");
          },
        }),
      ],
      { port: 0 },
    );
  });
  afterAll(() => served.close());

  it("streams the tool's events, then one result, with the call's ids in the context", async () => {
    const messages = await call(
      served.address,
      create(InvokeRequestSchema, {
        tool: "data.query",
        arguments: {
          filters: [{ column: "status", op: "in", value: ["open", "shipped"] }],
          limit: 3,
        },
        context: { traceId: "t", callId: "c" },
      }),
    );
    expect(messages.map((m) => m.message.case)).toEqual(["event", "event", "result"]);
    const [query, result] = messages.map((m) =>
      m.message.case === "event" ? m.message.value : undefined,
    );
    expect(query?.kind).toBe(TraceEventKind.DATA_QUERY);
    expect(query?.payload).toMatchObject({ parameter_count: 3 });
    expect(result?.kind).toBe(TraceEventKind.DATA_RESULT);
    const final = messages[2]?.message;
    expect(final?.case === "result" && final.value.output?.row_count).toBe(3);
  });

  it("turns a ToolError into a result with its code, and refuses a tool it does not serve", async () => {
    const [only] = await call(served.address, create(InvokeRequestSchema, { tool: "sdk.fail" }));
    expect(only?.message.case === "result" && only.message.value.error).toMatchObject({
      code: "nope",
      message: "it failed on purpose",
    });
    await expect(
      call(served.address, create(InvokeRequestSchema, { tool: "other" })),
    ).rejects.toMatchObject({
      code: grpc.status.NOT_FOUND,
    });
  });

  it("keeps values out of the SQL text and column names to the whitelist", () => {
    const { sql, params } = buildQuery({
      filters: [{ column: "customer", op: "eq", value: "x' OR 1=1 --" }],
      order_by: { column: "amount", direction: "desc" },
      limit: 10,
    });
    expect(sql).toBe(
      "SELECT id, customer, region, status, amount, created_at FROM orders WHERE customer = ? ORDER BY amount DESC LIMIT ?",
    );
    expect(params).toEqual(["x' OR 1=1 --", 10]);
    expect(() =>
      buildQuery({ filters: [{ column: "id; DROP TABLE orders" as never, op: "eq", value: 1 }] }),
    ).toThrow(/unknown column/);
  });

  it("refuses a tool name the registry would refuse", () => {
    expect(() =>
      defineTool({ name: "Bad Name", description: "", inputSchema: {}, handler: () => ({}) }),
    ).toThrow(/1-64 characters/);
  });
});
