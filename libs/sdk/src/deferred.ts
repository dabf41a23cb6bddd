import { create, type JsonObject } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Code, ConnectError } from "@toolmesh/errors";
import { CallbackService, CallErrorSchema, CallStatus } from "@toolmesh/proto";
import { ToolError } from "./tool-error.js";

/**
 * What a handler returns to finish later: the call answers PENDING at once, and the work's result
 * is reported to the Callback service with the tool's own credential when it is done.
 */
export class Deferred {
  constructor(readonly work: () => Promise<JsonObject>) {}
}

/** The tool's own credential for Report: an API key with the role `tool-backend`. */
export interface ReportOptions {
  /** The Callback service, such as http://127.0.0.1:7104. */
  callbackUrl: string;
  /** The API key (or JWT) of the backend; it never leaves this process but for Report. */
  token: string;
  /** The agent id of that credential: registered as the tools' `reporters`. */
  agentId: string;
}

/** Reports the outcome of deferred work, retrying while the Callback service is unreachable. */
export class Reporter {
  private readonly client;

  constructor(
    private readonly options: ReportOptions,
    private readonly onFailure: (callId: string, error: unknown) => void,
  ) {
    this.client = createClient(
      CallbackService,
      createGrpcTransport({ baseUrl: options.callbackUrl }),
    );
  }

  /** Runs the work and reports what it returned or threw; never rejects. */
  async finish(callId: string, deferred: Deferred): Promise<void> {
    let report: Parameters<typeof this.client.report>[0];
    try {
      const output = await deferred.work();
      report = { callId, status: CallStatus.SUCCESS, output };
    } catch (error) {
      report = {
        callId,
        status: CallStatus.FAILURE,
        error: create(CallErrorSchema, {
          code: error instanceof ToolError ? error.code : "tool_error",
          message: error instanceof Error ? error.message : String(error),
          ...(error instanceof ToolError && error.details ? { details: error.details } : {}),
        }),
      };
    }
    const headers = { authorization: `Bearer ${this.options.token}` };
    for (let attempt = 1; ; attempt++) {
      try {
        await this.client.report(report, { headers });
        return;
      } catch (error) {
        const code = ConnectError.from(error).code;
        const transient = code === Code.Unavailable || code === Code.DeadlineExceeded;
        if (!transient || attempt >= 8) {
          this.onFailure(callId, error);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(5000, 100 * 2 ** attempt)));
      }
    }
  }
}
