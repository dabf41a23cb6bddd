import { create } from "@bufbuild/protobuf";
import { invalidField } from "@toolmesh/errors";
import { isTraceId, newTraceId } from "@toolmesh/names";
import {
  type DispatchBatchRequest,
  type DispatchBatchResponse,
  DispatchBatchResponseSchema,
  type DispatchResponse,
  type Principal,
} from "@toolmesh/proto";
import type { ToolCatalog } from "../catalog/tool-catalog.js";
import type { DispatchChain } from "../chain/dispatch-chain.js";
import type { DispatchOptions } from "../chain/types.js";

/** Most calls one DispatchBatch may carry. */
export const MAX_BATCH_CALLS = 100;

/**
 * Runs a batch: read-only tools in parallel, tools with side effects one at a time in request
 * order (alongside the read-only ones); results in request order, each with its own status.
 */
export async function runBatch(
  chain: DispatchChain,
  catalog: ToolCatalog,
  req: DispatchBatchRequest,
  principal: Principal,
  options: DispatchOptions,
  /** Options of one call beyond the batch's (a refusal the transport decided). */
  callOptionsOf: (index: number) => Partial<DispatchOptions> = () => ({}),
): Promise<DispatchBatchResponse> {
  if (req.calls.length === 0) throw invalidField("calls", "send at least one call");
  if (req.calls.length > MAX_BATCH_CALLS) {
    throw invalidField(
      "calls",
      `at most ${MAX_BATCH_CALLS} calls per batch; got ${req.calls.length}, split it`,
    );
  }
  if (req.traceId && !isTraceId(req.traceId)) {
    throw invalidField(
      "trace_id",
      "expected a W3C trace id: 32 lowercase hex characters; or leave it empty",
    );
  }
  const traceId = req.traceId || newTraceId();
  const callOptions: DispatchOptions = { ...options, batchTraceId: traceId };
  const results: DispatchResponse[] = new Array(req.calls.length);
  const parallel: Promise<void>[] = [];
  const sequential: number[] = [];
  req.calls.forEach((call, index) => {
    call.tool = catalog.resolve(call.tool);
    if (catalog.get(call.tool)?.spec?.sideEffects) {
      sequential.push(index);
    } else {
      parallel.push(
        chain
          .dispatchSettled(call, principal, { ...callOptions, ...callOptionsOf(index) })
          .then((result) => {
            results[index] = result;
          }),
      );
    }
  });
  const inOrder = (async () => {
    for (const index of sequential) {
      results[index] = await chain.dispatchSettled(
        req.calls[index] as (typeof req.calls)[number],
        principal,
        { ...callOptions, ...callOptionsOf(index) },
      );
    }
  })();
  await Promise.all([...parallel, inOrder]);
  return create(DispatchBatchResponseSchema, { results, traceId });
}
