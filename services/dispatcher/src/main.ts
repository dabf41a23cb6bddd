import { randomUUID } from "node:crypto";
import { streamMaxAgeMs } from "@toolmesh/config";
import { JetStreamPublisher } from "@toolmesh/nats";
import { runService } from "@toolmesh/service";
import { startTracing } from "@toolmesh/telemetry";
import { ApprovalSweeper } from "./approvals/approval-sweeper.js";
import { CallLimiter } from "./catalog/rate-limits.js";
import { followSnapshots } from "./catalog/snapshots.js";
import { dispatcherConfig } from "./config.js";
import { JetStreamLeases } from "./records/call-leases.js";
import { CallRecorder } from "./records/call-recorder.js";
import { Heartbeat } from "./records/heartbeat.js";
import { KvHeldCalls } from "./records/held-calls.js";
import { KvCallIdOwners, KvIdempotencyStore } from "./records/idempotency.js";
import { LeaseSweeper } from "./records/lease-sweeper.js";
import { StreamOutcomeLookup } from "./records/outcome-lookup.js";
import { StoreCapacity } from "./records/store-capacity.js";
import { createDispatcher } from "./server.js";
import type { GrpcPort } from "./transports/grpc-port.js";

await runService({
  name: "dispatcher",
  config: dispatcherConfig,
  streams: ["trace", "audit", "outcome", "inflight"],
  async start({ config, log, nc, js, jsm, streams, authenticatedRpc }) {
    const idempotency = await KvIdempotencyStore.open(nc, {
      windowMs: config.idempotencyWindowMs,
      replicas: config.jetstreamReplicas,
    });
    // Call ids stay owned as long as the Callback service keeps their outcomes.
    const callIds = await KvCallIdOwners.open(nc, {
      ttlMs: config.callTtlDays * 24 * 60 * 60 * 1000,
      replicas: config.jetstreamReplicas,
    });
    const snapshots = followSnapshots(nc, log);
    const capacity = new StoreCapacity(
      jsm,
      [streams.inflight, streams.trace, streams.audit, streams.outcome].map((s) => ({
        name: s.name ?? "",
        prefixes: (s.subjects ?? []).map((subject) => subject.replace(/>$/, "")),
      })),
      config.recordStoreMarginBytes || 4 * (nc.info?.max_payload ?? 1024 * 1024),
      log,
    );
    await capacity.check();
    capacity.start(2000);
    // A call waits for its records' acks: one that cannot have them now is answered at once.
    const publisher = new JetStreamPublisher(nc, {
      ackTimeoutMs: 5000,
      whenDisconnected: "fail",
      capacity,
    });
    const instance = config.instanceId ?? randomUUID();
    const heartbeat = await Heartbeat.start(
      nc,
      instance,
      {
        intervalMs: Math.max(100, Math.floor(config.dispatcherLostAfterMs / 3)),
        replicas: config.jetstreamReplicas,
      },
      log,
    );
    const leases = new JetStreamLeases(instance, publisher, jsm, log);
    const outcomes = new StreamOutcomeLookup(nc, js, streamMaxAgeMs(config));
    // A held call outlives its hold by a day in the bucket, so a sweep finds it expired even
    // after every Dispatcher was down for hours.
    const heldCalls = await KvHeldCalls.open(nc, jsm, {
      holdMs: config.approvalTimeoutMs,
      marginMs: 24 * 60 * 60 * 1000,
      replicas: config.jetstreamReplicas,
    });
    const sweeper = new LeaseSweeper({
      js,
      jsm,
      kv: heartbeat.kv,
      lastBeat: (id) => heartbeat.lastBeat(id),
      recorder: new CallRecorder(publisher, config.redactKeys, leases),
      outcomes,
      settings: {
        intervalMs: config.sweepIntervalMs,
        lostAfterMs: config.dispatcherLostAfterMs,
        graceMs: config.leaseGraceMs,
      },
      log,
    });
    sweeper.start();
    const tracing = startTracing("dispatcher");
    if (tracing.enabled) log.info("exporting spans over OTLP (OTEL_EXPORTER_OTLP_* is set)");
    const dispatcher = createDispatcher({
      tools: snapshots.tools,
      policy: snapshots.policy,
      limits: new CallLimiter(snapshots.limits, config.dispatcherReplicas),
      publisher,
      leases,
      idempotency,
      heldCalls,
      outcomes,
      callIds,
      auth: await authenticatedRpc(),
      settings: config,
      log,
      tracing,
    });
    const approvalSweeper = new ApprovalSweeper(
      dispatcher.approvals,
      {
        intervalMs: config.sweepIntervalMs,
        // An approved call whose start was never recorded is closed once any run of it would be
        // over; a denied or expired one whose refusal went unrecorded, after the lease grace.
        staleAfterMs: {
          approved: config.maxTimeoutMs + config.leaseGraceMs,
          refused: config.leaseGraceMs,
        },
      },
      log,
    );
    approvalSweeper.start();
    let grpcPort: GrpcPort | undefined;
    return {
      server: dispatcher.server,
      async listening() {
        if (config.grpcPort >= 0)
          grpcPort = await dispatcher.listenGrpc(config.grpcPort, config.host);
      },
      async draining() {
        // Calls get a few seconds to finish; whatever still runs then ends INTERRUPTED "shutdown".
        setTimeout(() => dispatcher.running.interruptAll("shutdown"), 3000).unref();
        await grpcPort?.close();
      },
      async stop() {
        await sweeper.stop();
        await approvalSweeper.stop();
        await dispatcher.close();
        await leases.close();
        await heartbeat.stop();
        capacity.stop();
        publisher.close();
        snapshots.stop();
        await tracing.shutdown();
      },
    };
  },
});
