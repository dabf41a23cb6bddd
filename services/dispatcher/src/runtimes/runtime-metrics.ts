import { counter } from "@toolmesh/telemetry";

/** Counts an instance of a local or docker tool replaced after it crashed or was taken out. */
export const localToolRestarts = () =>
  counter(
    "toolmesh_dispatcher_local_tool_restarts_total",
    "Local tool processes and docker tool containers replaced after they exited on their own, failed their health checks or their own breaker opened, by tool",
    ["tool"],
  );
