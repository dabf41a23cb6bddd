import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@toolmesh/errors";
import { CallErrorSchema, PrincipalSchema } from "@toolmesh/proto";
import { hideSecrets, hideSecretsInJson } from "@toolmesh/vault";
import type { CallSecrets } from "./call-secrets.js";
import type { AttemptResult, ToolRuntime } from "./runtime.js";

/**
 * A runtime whose attempts carry the tool's secrets: resolved for the call's caller (cached, see
 * CallSecrets) and handed to the runtime, which injects them into the backend request only. What
 * comes back (output, error message) has every value hidden, so a backend that echoes one cannot
 * put it in a record, a trace or the caller's answer. A tool without secrets pays one length check.
 */
export function withSecrets(runtime: ToolRuntime, secrets: CallSecrets): ToolRuntime {
  return {
    async invoke(attempt) {
      const spec = attempt.tool.spec;
      if (!spec || spec.secrets.length === 0) return runtime.invoke(attempt);
      let resolved: Awaited<ReturnType<CallSecrets["resolve"]>>;
      try {
        resolved = await secrets.resolve(
          attempt.tool,
          attempt.request.principal ?? create(PrincipalSchema, {}),
        );
      } catch (error) {
        const e = error instanceof ConnectError ? error : undefined;
        return {
          ok: false,
          error: create(CallErrorSchema, {
            code: "secret_unavailable",
            message: e
              ? e.rawMessage
              : "the tool's secrets could not be resolved; see the Dispatcher's log",
          }),
          transient: e?.code === Code.Unavailable,
        };
      }
      return hideValues(await runtime.invoke({ ...attempt, secrets: resolved }), resolved.values);
    },
    ...(runtime.close ? { close: () => runtime.close?.() ?? Promise.resolve() } : {}),
  };
}

function hideValues(result: AttemptResult, values: readonly string[]): AttemptResult {
  if (result.ok) return { ...result, output: hideSecretsInJson(result.output, values) };
  const message = hideSecrets(result.error.message, values);
  if (message === result.error.message) return result;
  return { ...result, error: create(CallErrorSchema, { ...result.error, message }) };
}
