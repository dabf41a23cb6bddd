import type { LocalProtocol } from "@toolmesh/proto";

/** How supervised backends are run, from the Dispatcher's configuration. */
export interface SupervisorSettings {
  idleTimeoutMs: number;
  /** Calls at once per instance. */
  maxConcurrency: number;
  startTimeoutMs: number;
  /** How often each running instance is health-checked (TOOLMESH_HEALTH_INTERVAL_MS). */
  healthIntervalMs: number;
}

/** What a supervised runtime's spec says about supervision (local and docker runtimes both have it). */
export interface SupervisedSpec {
  protocol: LocalProtocol;
  maxConcurrency: number;
  idleTimeoutMs: number;
}

/** Raised when a tool's backend cannot be started or does not become healthy. */
export class ToolStartError extends Error {
  override name = "ToolStartError";
}

/** A started backend (a process or a container) as its launcher hands it over. */
export interface LaunchedBackend {
  /** The port on 127.0.0.1 where the tool serves. */
  readonly port: number;
  /** The process id of a local tool; 0 for a container. */
  readonly pid: number;
  /** The container id of a docker tool; empty for a process. */
  readonly containerId: string;
  /** Settles once the backend has ended (and is cleaned up), saying how it ended. */
  readonly ended: Promise<string>;
  /** Ends the backend, politely and then by force; resolves once `ended` has settled. */
  stop(): Promise<void>;
}

/** Starts one backend from a spec; throws ToolStartError with a message for the operator. */
export type Launch<S> = (spec: S) => Promise<LaunchedBackend>;
