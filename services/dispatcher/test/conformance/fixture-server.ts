import http from "node:http";
import type { AddressInfo } from "node:net";
import type { JsonObject } from "@bufbuild/protobuf";
import {
  createMcpHandler,
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  Server,
  UriTemplate,
} from "@modelcontextprotocol/server";
import { sendWebResponse, toWebRequest } from "../../src/transports/facade/web-bridge.js";
import { fixtureTools } from "./fixture-tools.js";

// The MCP server the conformance test imports into toolmesh: the suite's tools
// (fixture-tools.ts), resources and prompts, served over streamable HTTP with the official
// server SDK, both revisions. toolmesh speaks 2026-07-28 to it.

const IMAGE =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const TEMPLATE = new UriTemplate("test://template/{id}/data");

const resources: JsonObject[] = [
  {
    uri: "test://static-text",
    name: "static-text",
    title: "Static Text Resource",
    description: "A static text resource for testing",
    mimeType: "text/plain",
  },
  {
    uri: "test://static-binary",
    name: "static-binary",
    title: "Static Binary Resource",
    description: "A static binary resource (image) for testing",
    mimeType: "image/png",
  },
  {
    uri: "test://watched-resource",
    name: "watched-resource",
    title: "Watched Resource",
    description: "A resource clients may subscribe to",
    mimeType: "text/plain",
  },
];

const prompts: JsonObject[] = [
  {
    name: "test_simple_prompt",
    title: "Simple Test Prompt",
    description: "A simple prompt without arguments",
  },
  {
    name: "test_prompt_with_arguments",
    title: "Prompt With Arguments",
    description: "A prompt with required arguments",
    arguments: [
      { name: "arg1", description: "First test argument", required: true },
      { name: "arg2", description: "Second test argument", required: true },
    ],
  },
  {
    name: "test_prompt_with_embedded_resource",
    title: "Prompt With Embedded Resource",
    description: "A prompt that includes an embedded resource",
    arguments: [
      { name: "resourceUri", description: "URI of the resource to embed", required: true },
    ],
  },
  {
    name: "test_prompt_with_image",
    title: "Prompt With Image",
    description: "A prompt that includes image content",
  },
  {
    name: "test_input_required_result_prompt",
    description: "MRTR: prompt that requires elicitation input",
  },
];

const user = (content: JsonObject) => ({ role: "user", content });

function promptMessages(
  name: string,
  args: Record<string, string>,
  answers: Record<string, JsonObject>,
): JsonObject {
  switch (name) {
    case "test_simple_prompt":
      return { messages: [user({ type: "text", text: "This is a simple prompt for testing." })] };
    case "test_prompt_with_arguments":
      return {
        messages: [
          user({
            type: "text",
            text: `Prompt with arguments: arg1='${args.arg1}', arg2='${args.arg2}'`,
          }),
        ],
      };
    case "test_prompt_with_embedded_resource":
      return {
        messages: [
          user({
            type: "resource",
            resource: {
              uri: args.resourceUri ?? "",
              mimeType: "text/plain",
              text: "Embedded resource content for testing.",
            },
          }),
          user({ type: "text", text: "Please process the embedded resource above." }),
        ],
      };
    case "test_prompt_with_image":
      return {
        messages: [
          user({ type: "image", data: IMAGE, mimeType: "image/png" }),
          user({ type: "text", text: "Please analyze the image above." }),
        ],
      };
    case "test_input_required_result_prompt": {
      const answer = answers.user_context;
      if (!answer)
        return {
          resultType: "input_required",
          inputRequests: {
            user_context: {
              method: "elicitation/create",
              params: {
                message: "What context should the prompt use?",
                requestedSchema: {
                  type: "object",
                  properties: { context: { type: "string" } },
                  required: ["context"],
                },
              },
            },
          },
        };
      const context = (answer.content as JsonObject | undefined)?.context;
      return {
        messages: [user({ type: "text", text: `Prompt with context: ${String(context)}` })],
      };
    }
    default:
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `prompt not found: ${name}`);
  }
}

function readResource(uri: string): JsonObject {
  if (uri === "test://static-text" || uri === "test://watched-resource")
    return {
      contents: [
        {
          uri,
          mimeType: "text/plain",
          text:
            uri === "test://static-text"
              ? "This is the content of the static text resource."
              : "Watched resource content",
        },
      ],
    };
  if (uri === "test://static-binary")
    return { contents: [{ uri, mimeType: "image/png", blob: IMAGE }] };
  const id = TEMPLATE.match(uri)?.id;
  if (id !== undefined)
    return {
      contents: [
        {
          uri,
          mimeType: "application/json",
          text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }),
        },
      ],
    };
  throw new ResourceNotFoundError(uri);
}

/** One server instance (the SDK makes one per request). */
function fixtureServer(): Server {
  const server = new Server(
    { name: "toolmesh-conformance-fixture", version: "1.0.0" },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        prompts: { listChanged: true },
        completions: {},
        logging: {},
      },
    },
  );
  server.setRequestHandler(
    "tools/list",
    () =>
      ({
        tools: fixtureTools.map((tool) => ({
          name: tool.name,
          description: tool.description,
          inputSchema: tool.inputSchema ?? { type: "object", properties: {} },
          ...(tool.taskSupport ? { execution: { taskSupport: tool.taskSupport } } : {}),
        })),
      }) as never,
  );
  server.setRequestHandler("tools/call", async (request, ctx) => {
    const tool = fixtureTools.find((t) => t.name === request.params.name);
    if (!tool)
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `unknown tool ${request.params.name}`,
      );
    return (await tool.run((request.params.arguments ?? {}) as JsonObject, ctx)) as never;
  });
  server.setRequestHandler("resources/list", () => ({ resources }) as never);
  server.setRequestHandler(
    "resources/templates/list",
    () =>
      ({
        resourceTemplates: [
          {
            uriTemplate: "test://template/{id}/data",
            name: "template",
            title: "Resource Template",
            description: "A resource template with parameter substitution",
            mimeType: "application/json",
          },
        ],
      }) as never,
  );
  server.setRequestHandler(
    "resources/read",
    (request) => readResource(request.params.uri) as never,
  );
  server.setRequestHandler("prompts/list", () => ({ prompts }) as never);
  server.setRequestHandler(
    "prompts/get",
    (request, ctx) =>
      promptMessages(
        request.params.name,
        (request.params.arguments ?? {}) as Record<string, string>,
        (ctx.mcpReq.inputResponses ?? {}) as Record<string, JsonObject>,
      ) as never,
  );
  server.setRequestHandler("completion/complete", (request) => {
    const value = String(request.params.argument.value ?? "");
    const values = ["paris", "park", "party"].filter((v) => v.startsWith(value.toLowerCase()));
    return { completion: { values, total: values.length, hasMore: false } } as never;
  });
  return server;
}

/** The fixture on a free port of 127.0.0.1; its /mcp URL, and how to stop it. */
export async function serveFixture(): Promise<{ url: string; close(): Promise<void> }> {
  const handler = createMcpHandler(() => fixtureServer(), { legacy: "stateless" });
  const server = http.createServer((req, res) => {
    const aborted = new AbortController();
    res.on("close", () => aborted.abort());
    void handler
      .fetch(toWebRequest(req, aborted.signal))
      .then((response) => sendWebResponse(res, response))
      .catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    async close() {
      await handler.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
