import { awaitsApproval, CallStatus, type DispatchResponse, statusWord } from "@toolmesh/proto";

/**
 * A call's result as the text a model reads: the output's JSON on success; otherwise what went
 * wrong and what to do (a refusal keeps its per-path validation lines).
 */
export function resultText(result: DispatchResponse | undefined): string {
  if (!result) return "error: the call did not run";
  switch (result.status) {
    case CallStatus.SUCCESS:
      return JSON.stringify(result.output ?? {});
    case CallStatus.PENDING:
      if (awaitsApproval(result))
        return `awaiting approval (call_id ${result.callId}): ${result.error?.message ?? ""}`;
      return `the tool accepted the call and finishes it later (call_id ${result.callId}); its outcome arrives as a callback`;
    case CallStatus.REFUSED:
      return `error (${result.refusalCode || "refused"}): ${result.error?.message ?? "the call was refused"}`;
    default:
      return `error (${result.error?.code || statusWord(result.status)}): ${result.error?.message ?? "the tool failed"}`;
  }
}
