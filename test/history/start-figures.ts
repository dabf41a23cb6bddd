import { startStack, type TestStack, type TestStackOptions } from "@toolmesh/testkit";

/** How a stack started: the whole, and each process from spawn to SERVING (ready, if no port). */
export interface StartFigures {
  /** From the start call until every service was SERVING, nats-server included. */
  stackMs: number;
  /** Wall ms from spawn to SERVING, of nats-server and each service. */
  readyMs: Record<string, number>;
  /** CPU ms each service had used by then. */
  cpuMs: Record<string, number>;
}

/** Starts a stack of these services on a data directory and reads how each process started. */
export async function timedStart(
  dataDir: string,
  services: string[],
  options: TestStackOptions = {},
): Promise<{ stack: TestStack; figures: StartFigures }> {
  const began = performance.now();
  const stack = await startStack({ ...options, services, dataDir });
  const stackMs = performance.now() - began;
  const processes = services.map((name) => [name, stack.service(name)] as const);
  return {
    stack,
    figures: {
      stackMs,
      readyMs: Object.fromEntries([
        ["nats-server", stack.nats.readyMs],
        ...processes.map(([name, p]) => [name, p.readyMs]),
      ]),
      cpuMs: Object.fromEntries(processes.map(([name, p]) => [name, p.readyCpuMs])),
    },
  };
}

/** The best of several starts, figure by figure: a loaded machine only ever adds time. */
export function bestStart(samples: StartFigures[]): StartFigures {
  const min = (pick: (f: StartFigures) => Record<string, number>) =>
    Object.fromEntries(
      Object.keys(pick(samples[0] as StartFigures)).map((k) => [
        k,
        Math.min(...samples.map((f) => pick(f)[k] ?? Number.POSITIVE_INFINITY)),
      ]),
    );
  return {
    stackMs: Math.min(...samples.map((f) => f.stackMs)),
    readyMs: min((f) => f.readyMs),
    cpuMs: min((f) => f.cpuMs),
  };
}
