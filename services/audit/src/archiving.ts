import { toBinary } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import { buckets, openBucket } from "@toolmesh/nats";
import { AuditLogHoldSchema } from "@toolmesh/proto";
import type { JetStreamClient, JetStreamManager, NatsConnection } from "nats";
import { Archiver, type ArchiverOptions } from "./archiver.js";
import { LogRoom } from "./log-room.js";

/** How long a hold written to the bucket lives: a writer that died stops being named. */
const HOLD_TTL_MS = 5 * 60 * 1000;

/** The archive and the log's room, as the chain writer runs them under its lease. */
export interface Archiving {
  archiver: Archiver;
  room: LogRoom;
  /** Stops waiting for room first (the recorder then stops), then the archive. */
  stopRoom(): void;
  stop(): Promise<void>;
}

/**
 * Starts the archive where it ended and the watch on the log's room, with the hold written to
 * the bucket `toolmesh-audit` (key `log.hold`) for the Dispatcher to name.
 */
export async function startArchiving(options: {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  log: Logger;
  replicas: number;
  archive: Omit<ArchiverOptions, "js" | "jsm" | "log">;
}): Promise<Archiving> {
  const { nc, js, jsm, log } = options;
  const kv = await openBucket(js, jsm, buckets.audit.name, {
    replicas: options.replicas,
    ttlMs: HOLD_TTL_MS,
    maxBytes: 1024 * 1024,
  });
  const archiver = new Archiver({ js, jsm, log, ...options.archive });
  await archiver.start();
  const room = new LogRoom({
    jsm,
    nc,
    log,
    archive: archiver,
    archiveDir: options.archive.dir,
    publish: async (hold) => {
      await kv.put(buckets.audit.logHoldKey, toBinary(AuditLogHoldSchema, hold));
    },
  });
  await room.start();
  return {
    archiver,
    room,
    stopRoom: () => room.stop(),
    async stop() {
      room.stop();
      await archiver.stop();
    },
  };
}
