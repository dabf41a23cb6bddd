import { Code, ConnectError } from "@toolmesh/errors";
import { compareAndSet, UpdateConflictError, updateWithRetry } from "@toolmesh/nats";
import { startTestBus, TEST_JS_OPTIONS, type TestBus } from "@toolmesh/testkit";
import { connect, type KV, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * updateWithRetry against a real KV bucket, with a second connection writing the same key between
 * a read and its compare-and-set write: it lands once the racer stops, gives up after its attempts
 * or its time with one ABORTED error naming what kept changing, and no increment is ever lost.
 */
describe("updateWithRetry", () => {
  let bus: TestBus;
  let nc: NatsConnection;
  let racer: NatsConnection;
  let kv: KV;
  let racerKv: KV;

  beforeAll(async () => {
    bus = await startTestBus();
    nc = bus.nc;
    racer = await connect({ servers: bus.nats.url });
    kv = await nc.jetstream(TEST_JS_OPTIONS).views.kv("update-retry", { history: 1 });
    racerKv = await racer.jetstream(TEST_JS_OPTIONS).views.kv("update-retry");
  });

  afterAll(async () => {
    await racer?.close();
    await bus?.destroy();
  });

  /** Adds one to a counter key; `between` runs after the read, before the write. */
  const increment = (key: string, between: () => Promise<unknown>) => async () => {
    const entry = await kv.get(key);
    const value = String(Number(entry?.string() ?? "0") + 1);
    await between();
    if (entry?.operation === "PUT")
      await compareAndSet(() => kv.update(key, value, entry.revision));
    else await compareAndSet(() => kv.create(key, value));
    return value;
  };
  /** The racer's write: the key changes under the attempt. */
  const race = (key: string) => racerKv.put(key, "100");

  it("writes once the racing writer stops, reading the racer's value again", async () => {
    let raced = 0;
    const written = await updateWithRetry(
      'counter "a"',
      increment("a", () => (raced++ < 3 ? race("a") : Promise.resolve())),
    );
    expect(raced).toBe(4);
    expect(written).toBe("101");
    expect((await kv.get("a"))?.string()).toBe("101");
  });

  it("gives up after its attempts with ABORTED naming what kept changing", async () => {
    let tries = 0;
    const error = await updateWithRetry(
      'counter "b"',
      increment("b", () => {
        tries++;
        return race("b");
      }),
      { attempts: 4 },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpdateConflictError);
    expect(tries).toBe(4);
    const aborted = ConnectError.from(error);
    expect(aborted.code).toBe(Code.Aborted);
    expect(aborted.rawMessage).toMatch(
      /^counter "b" kept changing: each of 4 writes in \d+ ms lost to a concurrent writer; retry$/,
    );
    expect((error as UpdateConflictError).what).toBe('counter "b"');
  });

  it("gives up within its time however many attempts remain", async () => {
    const started = Date.now();
    const error = await updateWithRetry(
      'counter "c"',
      increment("c", () => race("c")),
      {
        attempts: 1000,
        budgetMs: 150,
      },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpdateConflictError);
    expect((error as UpdateConflictError).attempts).toBeLessThan(1000);
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it("loses no increment among writers racing each other", async () => {
    const writers = 20;
    await Promise.all(
      Array.from({ length: writers }, () =>
        updateWithRetry(
          'counter "d"',
          increment("d", () => Promise.resolve()),
          { attempts: 100, budgetMs: 10_000 },
        ),
      ),
    );
    expect((await kv.get("d"))?.string()).toBe(String(writers));
  });

  it("passes any other error on at once, and knows only its own errors", async () => {
    let tries = 0;
    const error = await updateWithRetry('counter "e"', async () => {
      tries++;
      throw new Error("not a conflict");
    }).catch((e: unknown) => e);
    expect((error as Error).message).toBe("not a conflict");
    expect(tries).toBe(1);
    expect(new ConnectError("x", Code.Aborted)).not.toBeInstanceOf(UpdateConflictError);
  });
});
