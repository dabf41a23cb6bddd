import { int } from "@toolmesh/config";

/** When the launcher restarts a process that exited on its own, and when it gives up. */
export interface RestartPolicy {
  /** Restarts allowed within `windowMs`; one more exit in the window is a crash loop. */
  maxRestarts: number;
  /** The window the restarts are counted in (ms). */
  windowMs: number;
  /** The delay before the first restart in a window; each further one doubles it. */
  firstDelayMs: number;
  /** The longest delay before a restart. */
  maxDelayMs: number;
}

/** 5 restarts within 60 s, after 250 ms doubling up to 5 s (each with jitter). */
export const DEFAULT_RESTART_POLICY: RestartPolicy = {
  maxRestarts: 5,
  windowMs: 60_000,
  firstDelayMs: 250,
  maxDelayMs: 5_000,
};

/** TOOLMESH_RESTART_LIMIT and TOOLMESH_RESTART_WINDOW_MS, as `npm start` reads them. */
export const restartPolicyConfig = {
  restartLimit: int("TOOLMESH_RESTART_LIMIT", DEFAULT_RESTART_POLICY.maxRestarts, {
    min: 0,
    max: 1000,
  }),
  restartWindowMs: int("TOOLMESH_RESTART_WINDOW_MS", DEFAULT_RESTART_POLICY.windowMs, {
    min: 1000,
    max: 86_400_000,
  }),
};

/**
 * The delay before restart `attempt` (1, 2 … within the window): the first delay doubled per
 * attempt up to the maximum, of which a random half is taken off ("equal jitter"), so replicas
 * that died together do not all come back in the same instant.
 */
export function restartDelayMs(
  attempt: number,
  policy: RestartPolicy,
  random: () => number = Math.random,
): number {
  const base = Math.min(policy.firstDelayMs * 2 ** (attempt - 1), policy.maxDelayMs);
  return Math.round(base / 2 + random() * (base / 2));
}

/**
 * The restarts of one process within the policy's window. `next()` is asked at each exit: it
 * answers the attempt and its delay, or undefined when the exit would be one restart too many.
 */
export class RestartWindow {
  private readonly times: number[] = [];

  constructor(
    private readonly policy: RestartPolicy,
    private readonly now: () => number = Date.now,
    private readonly random: () => number = Math.random,
  ) {}

  /** Restarts made within the window up to now. */
  get recent(): number {
    this.forget();
    return this.times.length;
  }

  /** Records a restart and returns its attempt number and delay; undefined for a crash loop. */
  next(): { attempt: number; delayMs: number } | undefined {
    this.forget();
    if (this.times.length >= this.policy.maxRestarts) return undefined;
    this.times.push(this.now());
    const attempt = this.times.length;
    return { attempt, delayMs: restartDelayMs(attempt, this.policy, this.random) };
  }

  private forget(): void {
    const since = this.now() - this.policy.windowMs;
    while (this.times.length > 0 && (this.times[0] as number) <= since) this.times.shift();
  }
}
