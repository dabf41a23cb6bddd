import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { create } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import {
  CallStatus,
  DispatcherService,
  type DispatchRequest,
  DispatchRequestSchema,
  type DispatchResponse,
} from "@toolmesh/proto";
import { grpcServiceDefinition } from "@toolmesh/sdk";
import { LineWatcher, repoRoot } from "@toolmesh/testkit";
import type { Call } from "./closed-loop.js";

/** A unary call over a grpc-js client; the metadata is asked for per call. */
export function unaryCall<Req, Res>(
  client: grpc.Client,
  method: grpc.MethodDefinition<Req, Res>,
  metadata: () => grpc.Metadata,
) {
  return (req: Req) =>
    new Promise<Res>((resolve, reject) =>
      client.makeUnaryRequest(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
        req,
        metadata(),
        (error, value) => (error ? reject(error) : resolve(value as Res)),
      ),
    );
}

/** Runs a bench script (bench/echo-server.ts …) and waits for its `listening` line. */
export async function spawnScript(
  file: string,
  env: Record<string, string>,
): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(repoRoot, file)], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const out = new LineWatcher(child.stdout as NonNullable<typeof child.stdout>);
  const err = new LineWatcher(child.stderr as NonNullable<typeof child.stderr>);
  const line = await out
    .waitFor((l) => l.includes('"listening'), 30_000, `${file} to listen`)
    .catch((error) => {
      throw new Error(`${String(error)}\n${err.tail()}`);
    });
  return { child, port: (JSON.parse(line) as { port: number }).port };
}

const dispatchMethod = grpcServiceDefinition(DispatcherService).dispatch as grpc.MethodDefinition<
  DispatchRequest,
  DispatchResponse
>;

/**
 * A Dispatch of bench/noop-tool.ts's `bench.noop` through the Dispatcher's grpc-js port, over one
 * HTTP/2 connection; rejects unless the call succeeded. The metadata (the agent's token) is read
 * per call, so calls can rotate over agents.
 */
export function noopDispatch(port: number, metadata: () => grpc.Metadata): Call {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const dispatch = unaryCall(client, dispatchMethod, metadata);
  const request = create(DispatchRequestSchema, { tool: "bench.noop", arguments: { n: 1 } });
  return async () => {
    const res = await dispatch(request);
    if (res.status !== CallStatus.SUCCESS)
      throw new Error(`status ${CallStatus[res.status]}: ${res.error?.message}`);
  };
}
