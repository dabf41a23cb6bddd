import { kvKeyToken } from "@toolmesh/nats";

/** What a budget counts: the calls of an agent, a user or a grant. */
export type BudgetKind = "agent" | "user" | "grant";

/** How long a budget lasts before it is whole again. */
export type BudgetPeriodWord = "day" | "month";

/** A currency an operator names: 1-8 upper-case letters or digits, starting with a letter. */
export const CURRENCY = /^[A-Z][A-Z0-9]{0,7}$/;

/** A budget's id and key suffix in the permission bucket: one budget per kind, target and period. */
export function budgetId(kind: BudgetKind, target: string, period: BudgetPeriodWord): string {
  return `${kind}.${kvKeyToken(target)}.${period}`;
}

/** The period word a budget id ends with, or undefined when it is not a budget id. */
export function budgetPeriodOf(id: string): BudgetPeriodWord | undefined {
  const word = id.slice(id.lastIndexOf(".") + 1);
  return word === "day" || word === "month" ? word : undefined;
}

/** One period of a budget (UTC): its name in keys, and when it starts and ends. */
export interface BudgetWindow {
  /** `2026-07-28` for a day, `2026-07` for a month: sorts in time order. */
  token: string;
  startMs: number;
  endMs: number;
}

/** The period `ms` falls in. */
export function budgetWindow(period: BudgetPeriodWord, ms: number): BudgetWindow {
  const at = new Date(ms);
  const year = at.getUTCFullYear();
  const month = at.getUTCMonth();
  if (period === "day") {
    const startMs = Date.UTC(year, month, at.getUTCDate());
    return {
      token: new Date(startMs).toISOString().slice(0, 10),
      startMs,
      endMs: startMs + 24 * 60 * 60 * 1000,
    };
  }
  const startMs = Date.UTC(year, month, 1);
  return {
    token: new Date(startMs).toISOString().slice(0, 7),
    startMs,
    endMs: Date.UTC(year, month + 1, 1),
  };
}
