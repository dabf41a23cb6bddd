import type { Logger } from "@toolmesh/log";
import type { LocalRuntime as LocalRuntimeSpec } from "@toolmesh/proto";
import type { GrpcRuntime } from "./grpc-runtime.js";
import { launchProcess } from "./local-process.js";
import type { RemoteRuntime } from "./remote-runtime.js";
import type { SupervisorSettings } from "./supervised-backend.js";
import { type InstanceBreakers, SupervisedRuntime } from "./supervised-runtime.js";

/**
 * Tools whose backend is a command the Dispatcher starts on demand on a free port
 * (TOOLMESH_TOOL_PORT), health-checks, restarts on crash with backoff and stops when idle.
 */
export class LocalRuntime extends SupervisedRuntime<LocalRuntimeSpec> {
  constructor(
    grpcRuntime: GrpcRuntime,
    remote: RemoteRuntime,
    settings: SupervisorSettings,
    log: Logger,
    breakers?: InstanceBreakers,
  ) {
    super(
      {
        noun: "local tool",
        name: "local",
        specOf: (tool) => {
          const kind = tool.spec?.runtime?.kind;
          return kind?.case === "local" ? kind.value : undefined;
        },
        launcher: (_tool, _log, secrets) => (spec) => launchProcess(spec, secrets),
      },
      grpcRuntime,
      remote,
      settings,
      log,
      breakers,
    );
  }
}
