import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import {
  createMcpHandler,
  type McpHttpHandler,
  originValidationResponse,
} from "@modelcontextprotocol/server";
import type { RequestAuthenticator } from "@toolmesh/auth";
import type { Logger } from "@toolmesh/log";
import type { Principal } from "@toolmesh/proto";
import { readBody } from "@toolmesh/server";
import { entryKind } from "../../catalog/mcp-entries.js";
import type { ToolSource } from "../../catalog/tool-catalog.js";
import type { ServerNotice } from "../../runtimes/mcp-runtime.js";
import { authenticateRequest, errorResponse, json } from "../facade/http-errors.js";
import { HEADER_MISMATCH, paramHeaderMismatch } from "./mcp-param-headers.js";
import { RESOURCE_METADATA_PATH } from "./mcp-paths.js";
import type { PostedResponse } from "./mcp-push.js";
import { createMcpToolServer, type McpToolsDeps } from "./mcp-tools.js";

export interface McpEndpointOptions {
  authenticate: RequestAuthenticator;
  /** Hostnames a browser's Origin may name; any other Origin gets 403 (DNS rebinding). */
  allowedOrigins: string[];
  /** Authorization servers announced in the protected-resource metadata (RFC 9728). */
  authorizationServers: string[];
  maxBodyBytes: number;
  log: Logger;
}

const PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion";

/**
 * `/mcp` over streamable HTTP, both revisions in use: 2026-07-28 (stateless, per-request
 * `_meta`, headers checked against the body) and 2025-11-25 (initialize, served statelessly).
 * Every request is authenticated with the same bearer tokens as the RPCs; the token stays here.
 */
export class McpEndpoint {
  private readonly handler: McpHttpHandler;

  constructor(
    private readonly deps: McpToolsDeps,
    private readonly options: McpEndpointOptions,
  ) {
    this.handler = createMcpHandler(
      (ctx) => {
        const principal = ctx.authInfo?.extra?.principal as Principal | undefined;
        if (!principal) throw new Error("an MCP request reached the server unauthenticated");
        return createMcpToolServer(deps, {
          principal,
          era: ctx.era,
          signal: ctx.requestInfo?.signal ?? new AbortController().signal,
        });
      },
      {
        legacy: "stateless",
        maxRequestBodySize: options.maxBodyBytes,
        onerror: (error) => options.log.debug({ err: error }, "MCP request rejected"),
      },
    );
  }

  /**
   * Follows the registry: a change tells open subscriptions which lists changed (tools, prompts,
   * resources), each only when an entry of its kind did.
   */
  followRegistry(tools: ToolSource): () => void {
    let last = listSignatures(tools);
    let pending = false;
    return (
      tools.onChange?.(() => {
        // A burst of changes (an import) is one notification per list.
        if (pending) return;
        pending = true;
        setImmediate(() => {
          pending = false;
          const now = listSignatures(tools);
          if (now.tool !== last.tool) this.handler.notify.toolsChanged();
          if (now.prompt !== last.prompt) this.handler.notify.promptsChanged();
          if (now.resource !== last.resource) this.handler.notify.resourcesChanged();
          last = now;
        });
      }) ?? (() => {})
    );
  }

  /**
   * Passes on what an imported server announces: a resource that changed, and a list that
   * changed (clients list again; the registry's entries change when the import is run again).
   */
  serverNotice(notice: ServerNotice): void {
    if (notice.kind === "resource_updated") this.handler.notify.resourceUpdated(notice.uri);
    else if (notice.list === "tools") this.handler.notify.toolsChanged();
    else if (notice.list === "prompts") this.handler.notify.promptsChanged();
    else this.handler.notify.resourcesChanged();
  }

  async serve(request: Request, peer: string): Promise<Response> {
    const rejected = originValidationResponse(request, this.options.allowedOrigins);
    if (rejected) return rejected;
    let principal: Principal;
    try {
      principal = await authenticateRequest(this.options.authenticate, request, peer);
    } catch (error) {
      return errorResponse(error, resourceMetadataUrl(request));
    }
    const authInfo = { token: "", clientId: principal.agentId, scopes: [], extra: { principal } };
    if (request.method !== "POST") return this.handler.fetch(request, { authInfo });
    const text = await readBody(request.body, this.options.maxBodyBytes);
    if (text === undefined)
      return json(413, {
        jsonrpc: "2.0",
        id: null,
        error: {
          code: -32600,
          message: `request body larger than ${this.options.maxBodyBytes} bytes`,
        },
      });
    let parsedBody: unknown;
    try {
      parsedBody = JSON.parse(text);
    } catch {
      // Not JSON: the SDK answers it with its parse error.
      return this.handler.fetch(
        new Request(request.url, { method: "POST", headers: request.headers, body: text }),
        { authInfo },
      );
    }
    // A 2025-11-25 client's answers to the questions of a call, POSTed on their own.
    const answers = postedResponses(parsedBody);
    if (answers) {
      for (const answer of answers) await this.deliver(answer, principal);
      return new Response(null, { status: 202 });
    }
    const mismatch = this.paramHeaders(parsedBody, request.headers);
    if (mismatch) return mismatch;
    return this.handler.fetch(request, { authInfo, parsedBody });
  }

  /**
   * A 2026-07-28 tools/call whose `Mcp-Param-*` headers disagree with its arguments (SEP-2243):
   * 400 with HeaderMismatch; undefined for anything else.
   */
  private paramHeaders(body: unknown, headers: Headers): Response | undefined {
    if (!body || typeof body !== "object" || Array.isArray(body)) return undefined;
    const message = body as { id?: JsonValue; method?: unknown; params?: JsonObject };
    const params = message.params;
    const meta = params?._meta as JsonObject | undefined;
    if (message.method !== "tools/call" || !meta?.[PROTOCOL_VERSION_META]) return undefined;
    const name = typeof params?.name === "string" ? params.name : "";
    const tool =
      this.deps.catalog.get(name) ?? this.deps.catalog.get(this.deps.catalog.resolve(name));
    const args = (params?.arguments ?? {}) as JsonObject;
    const found = paramHeaderMismatch(tool?.spec?.inputSchema, args, headers);
    if (!found) return undefined;
    return json(400, {
      jsonrpc: "2.0",
      id: message.id ?? null,
      error: {
        code: HEADER_MISMATCH,
        message: `Bad Request: header ${found.header} ${found.problem}`,
        data: { mismatch: { header: found.header, body: found.problem } },
      },
    });
  }

  /** An answer to a question this or another replica asked on a client's stream. */
  private async deliver(answer: PostedResponse, principal: Principal): Promise<void> {
    const { pushed, link } = this.deps;
    const sender = pushed.senderOf(answer.id);
    if (sender === undefined || sender === pushed.self || !link) {
      pushed.deliver(answer, principal);
      return;
    }
    await link
      .deliver(sender, answer as unknown as JsonObject, principal)
      .catch((error: unknown) =>
        this.options.log.debug({ err: error }, "an MCP client's answer found no waiting call"),
      );
  }

  /** RFC 9728 metadata: the resource, how to send the token, who issues tokens. */
  metadata(request: Request): Response {
    const origin = new URL(request.url).origin;
    return json(200, {
      resource: `${origin}/mcp`,
      resource_name: "toolmesh",
      bearer_methods_supported: ["header"],
      ...(this.options.authorizationServers.length > 0
        ? { authorization_servers: this.options.authorizationServers }
        : {}),
    });
  }

  close(): Promise<void> {
    return this.handler.close();
  }
}

/** The JSON-RPC responses a POST body is made of, or undefined when it holds anything else. */
function postedResponses(body: unknown): PostedResponse[] | undefined {
  const messages = Array.isArray(body) ? body : [body];
  if (messages.length === 0) return undefined;
  for (const message of messages) {
    if (message === null || typeof message !== "object" || "method" in message) return undefined;
    const id = (message as { id?: unknown }).id;
    if (typeof id !== "string" && typeof id !== "number") return undefined;
    if (!("result" in message) && !("error" in message)) return undefined;
  }
  return messages as PostedResponse[];
}

/** What each MCP list holds now, as text compared between registry changes. */
function listSignatures(tools: ToolSource): Record<"tool" | "prompt" | "resource", string> {
  const parts = { tool: [] as string[], prompt: [] as string[], resource: [] as string[] };
  for (const entry of tools.values()) {
    const kind = entryKind(entry);
    const list = kind === "template" ? "resource" : kind;
    parts[list].push(`${entry.spec?.name}@${entry.revision}:${entry.spec?.status}`);
  }
  return {
    tool: parts.tool.sort().join(","),
    prompt: parts.prompt.sort().join(","),
    resource: parts.resource.sort().join(","),
  };
}

function resourceMetadataUrl(request: Request): string {
  return `${new URL(request.url).origin}${RESOURCE_METADATA_PATH}`;
}
