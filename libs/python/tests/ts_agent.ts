// A TypeScript-side caller for the Python tests: `node --import tsx ts_agent.ts <mode> <address>
// <tool> <json-args> [token]`. mode `backend` calls ToolBackendService.Invoke directly (as the
// Dispatcher does); mode `dispatch` calls DispatcherService.Dispatch with the token. Prints one
// JSON line with what came back, or {"error": {code, message}}.
import { ConnectError } from "@toolmesh/errors";
import { toJson } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import {
  DispatcherService,
  DispatchResponseSchema,
  InvokeResponseSchema,
  ToolBackendService,
} from "@toolmesh/proto";

const [mode, address, tool, argsJson, token] = process.argv.slice(2);
const transport = createGrpcTransport({ baseUrl: `http://${address}` });
const args = JSON.parse(argsJson ?? "{}");

try {
  if (mode === "backend") {
    const client = createClient(ToolBackendService, transport);
    const messages = [];
    for await (const message of client.invoke({
      tool,
      arguments: args,
      context: { traceId: "0af7651916cd43dd8448eb211c80319c", callId: "ts-call-1" },
      principal: { agentId: "ts-agent", roles: ["agent"] },
      attempt: 1,
      deadlineMs: 5000,
    })) {
      messages.push(toJson(InvokeResponseSchema, message));
    }
    process.stdout.write(`${JSON.stringify({ messages })}\n`);
  } else {
    const client = createClient(DispatcherService, transport);
    const response = await client.dispatch(
      { tool, arguments: args },
      { headers: { authorization: `Bearer ${token}` }, timeoutMs: 10_000 },
    );
    process.stdout.write(`${JSON.stringify({ response: toJson(DispatchResponseSchema, response) })}\n`);
  }
} catch (error) {
  const e = ConnectError.from(error);
  process.stdout.write(`${JSON.stringify({ error: { code: e.code, message: e.rawMessage } })}\n`);
}
