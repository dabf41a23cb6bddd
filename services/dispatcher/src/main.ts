import { randomUUID } from "node:crypto";
import { JetStreamPublisher, retrySetup } from "@toolmesh/nats";
import { runService } from "@toolmesh/service";
import { startTracing } from "@toolmesh/telemetry";
import { requestConnectLink, requestSecrets } from "@toolmesh/vault";
import { ApprovalSweeper } from "./approvals/approval-sweeper.js";
import { BudgetLedger } from "./catalog/budget-ledger.js";
import { CallLimiter } from "./catalog/rate-limits.js";
import { followSnapshots, snapshotsLoaded } from "./catalog/snapshots.js";
import { dispatcherConfig } from "./config.js";
import { Heartbeat } from "./records/heartbeat.js";
import { KvHeldCalls } from "./records/held-calls.js";
import { KvCallIdOwners, KvIdempotencyStore } from "./records/idempotency.js";
import { AuditOutcomes } from "./records/outcome-lookup.js";
import { JetStreamRecords } from "./records/record-sink.js";
import { StoreCapacity } from "./records/store-capacity.js";
import { KvTaskIndex } from "./records/task-index.js";
import { createDispatcher } from "./server.js";
import type { GrpcPort } from "./transports/grpc-port.js";
import { NatsReplicaLink } from "./transports/replica-link.js";

/** How long a call waits for Permission to give its secrets (an OAuth refresh included). */
const VAULT_REQUEST_MS = 15_000;

await runService({
  name: "dispatcher",
  config: dispatcherConfig,
  streams: ["records"],
  async start({ config, log, nc, jsm, streams, authenticatedRpc }) {
    const idempotency = await KvIdempotencyStore.open(nc, {
      windowMs: config.idempotencyWindowMs,
      replicas: config.jetstreamReplicas,
    });
    const callIds = await KvCallIdOwners.open(nc, {
      ttlMs: config.callTtlDays * 24 * 60 * 60 * 1000,
      replicas: config.jetstreamReplicas,
    });
    const snapshots = followSnapshots(nc, log);
    await snapshotsLoaded(snapshots, log, 10_000);
    const capacity = new StoreCapacity(
      jsm,
      [
        {
          name: streams.records.name,
          prefixes: streams.records.subjects.map((subject) => subject.replace(/>$/, "")),
        },
      ],
      config.recordStoreMarginBytes || 4 * (nc.info?.max_payload ?? 1024 * 1024),
      log,
    );
    await retrySetup(() => capacity.check());
    // Often enough that what this process publishes between two reads (taken off the room it
    // read) stays well under the margin at full speed: Audit trims the stream in bulk, so a read
    // is what keeps the estimate from running ahead of the stream.
    capacity.start(250);
    // Batches wait for their acks; a lost connection lets them wait too (they are sent again
    // under the same message id until JetStream answers), so a call's answer is the truth.
    const publisher = new JetStreamPublisher(nc, {
      ackTimeoutMs: 5000,
      whenDisconnected: "wait",
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
    const records = new JetStreamRecords(
      publisher,
      instance,
      { maxInFlight: config.recordBatchesInFlight, retryForMs: config.recordRetryMs },
      capacity,
      (attempt, error) =>
        log.warn({ err: error, attempt }, "a record batch was not acked; sending it again"),
    );
    const outcomes = new AuditOutcomes(nc, 0);
    // A held call outlives its hold by a day in the bucket, so a sweep finds it expired even
    // after every Dispatcher was down for hours.
    const heldCalls = await KvHeldCalls.open(nc, jsm, {
      holdMs: config.approvalTimeoutMs,
      marginMs: 24 * 60 * 60 * 1000,
      replicas: config.jetstreamReplicas,
    });
    // MCP tasks are kept as long as call ids are owned: as long as Callback keeps outcomes.
    const taskIndex = await KvTaskIndex.open(nc, jsm, {
      ttlMs: config.callTtlDays * 24 * 60 * 60 * 1000,
      replicas: config.jetstreamReplicas,
      maxBytes: config.bucketMaxBytes.mcpTasks,
    });
    const link = new NatsReplicaLink(nc, instance, log);
    const tracing = await startTracing("dispatcher");
    if (tracing.enabled) log.info("exporting spans over OTLP (OTEL_EXPORTER_OTLP_* is set)");
    const dispatcher = createDispatcher({
      tools: snapshots.tools,
      policy: snapshots.policy,
      limits: new CallLimiter(snapshots.limits, config.dispatcherReplicas),
      budgets: new BudgetLedger(snapshots.budgets, snapshots.spend, instance),
      vault: {
        view: snapshots.vault,
        link: {
          resolve: (request) => requestSecrets(nc, request, VAULT_REQUEST_MS),
          link: (provider, user) => requestConnectLink(nc, provider, user, VAULT_REQUEST_MS),
        },
      },
      records,
      instance,
      idempotency,
      heldCalls,
      outcomes,
      callIds,
      auth: await authenticatedRpc(),
      settings: config,
      log,
      tracing,
      taskIndex,
      link,
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
        await approvalSweeper.stop();
        await dispatcher.close();
        records.close();
        await heartbeat.stop();
        capacity.stop();
        publisher.close();
        snapshots.stop();
        await tracing.shutdown();
      },
    };
  },
});
