import type { JsonObject } from "@bufbuild/protobuf";
import { defineTool } from "@toolmesh/sdk";

// The tools the MCP conformance suite calls (the names and results of its reference
// everything-server), written as ordinary toolmesh tools. Tools without an output schema that
// answer `{"content": [MCP content blocks]}` have the blocks passed through by /mcp.
const IMAGE =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";
const noArgs = { type: "object" } as const;

export const conformanceTools = [
  defineTool({
    name: "test_simple_text",
    description: "Tests simple text content response",
    inputSchema: noArgs,
    handler: () => ({
      content: [{ type: "text", text: "This is a simple text response for testing." }],
    }),
  }),
  defineTool({
    name: "test_image_content",
    description: "Tests image content response",
    inputSchema: noArgs,
    handler: () => ({ content: [{ type: "image", data: IMAGE, mimeType: "image/png" }] }),
  }),
  defineTool({
    name: "test_audio_content",
    description: "Tests audio content response",
    inputSchema: noArgs,
    handler: () => ({ content: [{ type: "audio", data: AUDIO, mimeType: "audio/wav" }] }),
  }),
  defineTool({
    name: "test_embedded_resource",
    description: "Tests embedded resource content response",
    inputSchema: noArgs,
    handler: () => ({
      content: [
        {
          type: "resource",
          resource: {
            uri: "test://embedded-resource",
            mimeType: "text/plain",
            text: "This is an embedded resource content.",
          },
        },
      ],
    }),
  }),
  defineTool({
    name: "test_multiple_content_types",
    description: "Tests response with multiple content types (text, image, resource)",
    inputSchema: noArgs,
    handler: (): JsonObject => ({
      content: [
        { type: "text", text: "Multiple content types test:" },
        { type: "image", data: IMAGE, mimeType: "image/png" },
        {
          type: "resource",
          resource: {
            uri: "test://mixed-content-resource",
            mimeType: "application/json",
            text: JSON.stringify({ test: "data", value: 123 }),
          },
        },
      ],
    }),
  }),
  defineTool({
    name: "test_tool_with_progress",
    description: "Tests tool that reports progress notifications",
    inputSchema: noArgs,
    handler: async (_args, ctx) => {
      for (const progress of [0, 50, 100]) {
        ctx.trace("PROGRESS", {
          progress,
          total: 100,
          message: `Completed step ${progress} of 100`,
        });
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return { content: [{ type: "text", text: "progress reported" }] };
    },
  }),
  defineTool({
    name: "test_error_handling",
    description: "Tests error response handling",
    inputSchema: noArgs,
    handler: () => {
      throw new Error("This tool intentionally returns an error for testing");
    },
  }),
];
