import { randomBytes } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import type { Server } from "@modelcontextprotocol/server";
import type { Principal } from "@toolmesh/proto";
import {
  type AskingCall,
  CallerRefusal,
  type CallerSide,
  type InputRequest,
} from "../../runtimes/runtime.js";

/** A JSON-RPC response a client POSTs to /mcp. */
export interface PostedResponse {
  id: string | number;
  result?: JsonObject;
  error?: { code: number; message: string; data?: JsonObject };
}

interface Waiting {
  principal: Principal;
  resolve: (answer: JsonObject) => void;
  reject: (error: Error) => void;
}

/**
 * The requests /mcp sent to 2025-11-25 clients on their requests' streams, until the client
 * POSTs each answer back (a separate HTTP request, which reaches this endpoint statelessly).
 * Ids are unguessable and name this instance; only the caller asked may answer.
 */
export class PushedRequests {
  private readonly waiting = new Map<string, Waiting>();

  constructor(private readonly instance: string) {}

  /** A new request id, naming this instance. */
  newId(): string {
    return `${this.instance}~${randomBytes(12).toString("base64url")}`;
  }

  /** The instance that sent request `id`, when it is one of the Dispatchers'. */
  senderOf(id: string | number): string | undefined {
    const at = String(id).lastIndexOf("~");
    return at > 0 ? String(id).slice(0, at) : undefined;
  }

  /** This instance's id. */
  get self(): string {
    return this.instance;
  }

  /** Waits for the answer to request `id` from `principal`, until the call's deadline. */
  wait(id: string, principal: Principal, deadlineMs: number): Promise<JsonObject> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => {
          this.waiting.delete(id);
          reject(new CallerRefusal(-32001, "the client did not answer before the call's deadline"));
        },
        Math.max(0, deadlineMs - Date.now()),
      );
      timer.unref();
      const settle =
        <T>(then: (value: T) => void) =>
        (value: T) => {
          clearTimeout(timer);
          this.waiting.delete(id);
          then(value);
        };
      this.waiting.set(id, { principal, resolve: settle(resolve), reject: settle(reject) });
    });
  }

  /** Delivers a POSTed answer; false when it answers no request of this instance for `principal`. */
  deliver(response: PostedResponse, principal: Principal): boolean {
    const waiting = this.waiting.get(String(response.id));
    if (
      !waiting ||
      waiting.principal.agentId !== principal.agentId ||
      waiting.principal.userId !== principal.userId
    )
      return false;
    if (response.error)
      waiting.reject(
        new CallerRefusal(response.error.code, response.error.message, response.error.data),
      );
    else waiting.resolve(response.result ?? {});
    return true;
  }

  /** Ends every wait (shutdown). */
  abandon(): void {
    for (const waiting of this.waiting.values())
      waiting.reject(new CallerRefusal(-32603, "the Dispatcher is shutting down"));
    this.waiting.clear();
  }
}

/**
 * A 2025-11-25 client as the caller of a call: each question is a request on the stream of the
 * client's own tools/call (or prompts/get, resources/read), answered by a POST. A stateless
 * request does not carry the client's capabilities, so every question is sent; a client that
 * cannot answer says so with an error, which the tool receives.
 */
export class PushCaller implements CallerSide {
  readonly capabilities: JsonObject = { elicitation: {}, sampling: {}, roots: {} };
  /** A stateless request cannot say its client's log level: the tool's log messages all come. */
  readonly logLevel = "debug";

  constructor(
    private readonly pushed: PushedRequests,
    private readonly server: Server,
    private readonly relatedRequestId: string | number,
    private readonly principal: Principal,
  ) {}

  async ask(_key: string, request: InputRequest, call: AskingCall): Promise<JsonObject> {
    const id = this.pushed.newId();
    const answer = this.pushed.wait(id, this.principal, call.deadlineMs);
    try {
      await this.server.transport?.send(
        { jsonrpc: "2.0", id, method: request.method, params: request.params },
        { relatedRequestId: this.relatedRequestId },
      );
    } catch (error) {
      this.pushed.deliver(
        { id, error: { code: -32603, message: `the client's stream is closed: ${String(error)}` } },
        this.principal,
      );
    }
    return answer;
  }
}
