import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "@toolmesh/log";
import { buckets, ReconnectingKvSnapshot } from "@toolmesh/nats";
import { type Tool, ToolSchema } from "@toolmesh/proto";
import type { NatsConnection } from "nats";

const RETRY_MS = 500;

/**
 * A read-only snapshot of the Registry's tools, for the scopes and groups Check needs. The
 * Registry owns the bucket; until it exists, Check fails closed with UNAVAILABLE.
 */
export class ToolCatalog {
  private snapshot: ReconnectingKvSnapshot<typeof ToolSchema> | undefined;
  private retry: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly nc: NatsConnection,
    private readonly log: Logger,
  ) {}

  /** Loads the snapshot when the bucket exists; otherwise keeps looking in the background. */
  async start(): Promise<void> {
    if (await this.attach()) return;
    this.log.warn(
      { bucket: buckets.registry.name },
      "registry bucket not found yet; Check answers UNAVAILABLE until the Registry creates it",
    );
    this.keepTrying();
  }

  private async attach(): Promise<boolean> {
    const jsm = await this.nc.jetstreamManager();
    try {
      await jsm.streams.info(`KV_${buckets.registry.name}`);
    } catch {
      return false;
    }
    const kv = await this.nc.jetstream().views.kv(buckets.registry.name, { bindOnly: true });
    const snapshot = new ReconnectingKvSnapshot(
      this.nc,
      kv,
      buckets.registry.toolPrefix,
      ToolSchema,
      this.log,
    );
    await snapshot.start();
    if (this.stopped) snapshot.stop();
    else this.snapshot = snapshot;
    return true;
  }

  private keepTrying(): void {
    this.retry = setTimeout(() => {
      this.attach().then(
        (ok) => {
          if (ok) this.log.info({ bucket: buckets.registry.name }, "registry snapshot loaded");
          else if (!this.stopped) this.keepTrying();
        },
        (error: unknown) => {
          this.log.warn({ err: error }, "cannot watch the registry yet; retrying");
          if (!this.stopped) this.keepTrying();
        },
      );
    }, RETRY_MS);
    this.retry.unref();
  }

  /** The tool by name, undefined when unknown; UNAVAILABLE before the snapshot is loaded. */
  get(name: string): Tool | undefined {
    if (!this.snapshot?.isReady)
      throw new ConnectError(
        "the registry snapshot is not loaded yet; retry shortly",
        Code.Unavailable,
      );
    return this.snapshot.get(buckets.registry.toolKey(name));
  }

  /** The tool by name when the snapshot is loaded and has it; never throws. */
  find(name: string): Tool | undefined {
    return this.snapshot?.isReady ? this.snapshot.get(buckets.registry.toolKey(name)) : undefined;
  }

  stop(): void {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    this.snapshot?.stop();
  }
}
