import { counter } from "@toolmesh/telemetry";

/** Counts a local tool's process restarting after it crashed. */
export const localToolRestarts = () =>
  counter(
    "toolmesh_dispatcher_local_tool_restarts_total",
    "Local tool processes and docker tool containers restarted after they exited on their own, by tool",
    ["tool"],
  );
