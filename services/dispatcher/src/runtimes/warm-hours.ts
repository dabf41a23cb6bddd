import type { WarmHours } from "@toolmesh/proto";

/** What a pooled runtime's spec says about its warm instances (local and docker alike). */
export interface WarmSpec {
  minInstances: number;
  warmHours: WarmHours[];
}

/** The instances a tool keeps warm at `nowMs`: its min_instances inside its warm hours (or always without any), else 0. */
export function warmInstances(spec: WarmSpec, nowMs: number): number {
  if (spec.minInstances === 0 || spec.warmHours.length === 0) return spec.minInstances;
  const now = new Date(nowMs);
  const hour = now.getUTCHours();
  const day = now.getUTCDay();
  for (const window of spec.warmHours) {
    if (hour < window.startHour || hour >= window.endHour) continue;
    if (window.weekdays.length === 0 || window.weekdays.includes(day)) return spec.minInstances;
  }
  return 0;
}
