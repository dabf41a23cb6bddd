import type { DispatchRequest, DispatchResponse, Principal } from "@toolmesh/proto";
import type { DispatchChain } from "../../chain/dispatch-chain.js";
import type { DispatchOptions } from "../../chain/types.js";
import type { DeferredCaller } from "./deferred-caller.js";
import type { InputDesk } from "./input-desk.js";

/**
 * A call's signal that follows the request's until the request answers early (the call waits for
 * its caller): from then on the call outlives the request, which ends without cancelling it.
 */
export function detachable(signal: AbortSignal | undefined): {
  signal: AbortSignal;
  detach(): void;
} {
  const controller = new AbortController();
  const follow = () => controller.abort(signal?.reason);
  if (signal?.aborted) follow();
  else signal?.addEventListener("abort", follow, { once: true });
  return {
    signal: controller.signal,
    detach: () => signal?.removeEventListener("abort", follow),
  };
}

/**
 * Dispatches a call whose caller answers the tool's questions later: the answer is the call's
 * first stop, its end or PENDING with `input_required`; then the call runs on without the request.
 */
export async function dispatchAnswerable(
  inputs: InputDesk,
  chain: DispatchChain,
  req: DispatchRequest,
  principal: Principal,
  options: DispatchOptions,
  caller: DeferredCaller,
): Promise<DispatchResponse> {
  const { signal, detach } = detachable(options.signal);
  const response = await inputs.dispatch(caller, principal, (deferred) =>
    chain.dispatch(req, principal, { ...options, signal, caller: deferred }),
  );
  if (response.inputRequired) detach();
  return response;
}
