import { Collector } from "@toolmesh/testkit";
import { describe, expect, it } from "vitest";
import {
  type CrashLoopEvent,
  type RestartingEvent,
  type RestartPolicy,
  RestartWindow,
  restartDelayMs,
  StackError,
  Supervisor,
} from "../src/index.js";

// The restart rule on its own: backoff, the crash-loop window, and a deliberate stop winning over
// a pending restart. The processes it restarts for real are in stack.test.ts, crash-loop.test.ts
// and test/supervision.test.ts.
const policy: RestartPolicy = { maxRestarts: 3, windowMs: 1000, firstDelayMs: 10, maxDelayMs: 40 };

/** A supervisor whose events are kept, and a relaunch whose outcome the test decides. */
function supervised() {
  const restarting = new Collector<RestartingEvent>();
  const restarted = new Collector<number>();
  const loops = new Collector<CrashLoopEvent>();
  const supervisor = new Supervisor("registry", policy, {
    restarting: (e) => restarting.push(e),
    restarted: (e) => restarted.push(e.attempt),
    crashLoop: (e) => loops.push(e),
  });
  let launches = 0;
  let outcome: () => Promise<void> = async () => {};
  const relaunch = () => {
    launches++;
    return outcome();
  };
  return {
    supervisor,
    restarting,
    restarted,
    loops,
    relaunch,
    launches: () => launches,
    failWith(error: Error) {
      outcome = async () => {
        throw error;
      };
    },
  };
}

const any = () => true;

describe("restart backoff", () => {
  it("doubles from the first delay up to the maximum, keeping a random half of each", () => {
    const p = { ...policy, firstDelayMs: 250, maxDelayMs: 5000 };
    expect([1, 2, 3, 4, 5, 6, 7].map((a) => restartDelayMs(a, p, () => 1))).toEqual([
      250, 500, 1000, 2000, 4000, 5000, 5000,
    ]);
    expect([1, 2, 3].map((a) => restartDelayMs(a, p, () => 0))).toEqual([125, 250, 500]);
  });

  it("allows maxRestarts within the window and counts afresh once older ones leave it", () => {
    let now = 0;
    const window = new RestartWindow(policy, () => now);
    expect([window.next(), window.next(), window.next()].map((n) => n?.attempt)).toEqual([1, 2, 3]);
    expect(window.next()).toBeUndefined();
    now = 1001;
    expect(window.recent).toBe(0);
    expect(window.next()?.attempt).toBe(1);
  });
});

describe("a supervisor", () => {
  it("restarts after each exit, counts it, and reports a crash loop with the last lines", async () => {
    const s = supervised();
    s.supervisor.exited({ died: "signal SIGKILL", lastLines: "listening" }, s.relaunch);
    await s.restarted.waitFor(any);
    expect(s.restarting.items[0]).toMatchObject({
      name: "registry",
      died: "signal SIGKILL",
      lastLines: "listening",
      attempt: 1,
    });
    expect(s.restarting.items[0]?.delayMs).toBeGreaterThanOrEqual(5);
    expect(s.supervisor.restarts).toBe(1);
    expect(s.supervisor.lastRestart?.died).toBe("signal SIGKILL");
    expect(s.supervisor.down).toBe(false);

    // From now on every restart fails before it is ready: two more restarts, then the loop.
    s.failWith(
      new StackError("registry exited (code 1 before it was ready)", {
        lastLines: "bad key file",
        died: "code 1 before it was ready",
      }),
    );
    s.supervisor.exited({ died: "code 1", lastLines: "" }, s.relaunch);
    const [loop] = await s.loops.waitFor(any);
    expect(s.restarting.items.map((e) => e.attempt)).toEqual([1, 2, 3]);
    expect(s.launches()).toBe(3);
    expect(s.supervisor.restarts).toBe(3);
    expect(loop?.name).toBe("registry");
    expect(loop?.lastLines).toBe("bad key file");
    expect(loop?.message).toBe(
      "registry keeps crashing: it exited again (code 1 before it was ready) after 3 restarts within 1 s, the most TOOLMESH_RESTART_LIMIT (3) and TOOLMESH_RESTART_WINDOW_MS (1000) allow",
    );
  });

  it("drops a pending restart when the process is stopped on purpose", async () => {
    const s = supervised();
    s.supervisor.exited({ died: "signal SIGKILL", lastLines: "" }, s.relaunch);
    expect(s.supervisor.down).toBe(true);
    s.supervisor.cancel();
    // Past the longest delay the policy allows: the restart that was pending never ran.
    await new Promise((resolve) => setTimeout(resolve, policy.maxDelayMs * 2));
    expect(s.launches()).toBe(0);
    expect(s.supervisor.down).toBe(false);
  });

  it("forgets a restart under way when the process is stopped on purpose", async () => {
    const s = supervised();
    let finish: (error?: Error) => void = () => {};
    const relaunch = () =>
      new Promise<void>((resolve, reject) => {
        finish = (error) => (error ? reject(error) : resolve());
      });
    const launched = new Collector<true>();
    s.supervisor.exited({ died: "signal SIGKILL", lastLines: "" }, () => {
      launched.push(true);
      return relaunch();
    });
    await launched.waitFor(any);
    s.supervisor.cancel();
    // The stop kills what the restart spawned: its failure is not another crash.
    finish(new StackError("registry exited (signal SIGTERM before it was ready)"));
    await new Promise((resolve) => setTimeout(resolve, policy.maxDelayMs * 2));
    expect(s.restarting.items).toHaveLength(1);
    expect(s.restarted.items).toEqual([]);
    expect(s.loops.items).toEqual([]);
  });
});
