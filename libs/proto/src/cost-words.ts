// How an amount of a currency reads, once for every service, the CLI and the console. Hand-written
// beside the generated contracts because prices, costs and budgets are millionths of a currency
// there (ToolSpec.price, Cost, BudgetSpec).

/** An amount in millionths of a currency, as text: `0.25 USD`. */
export function formatMicros(micros: bigint | number, currency: string): string {
  const n = typeof micros === "bigint" ? micros : BigInt(Math.round(micros));
  const whole = n / 1_000_000n;
  const fraction = (n % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "");
  return `${whole}${fraction ? `.${fraction}` : ""} ${currency}`.trim();
}

/** Amounts by currency (Usage.cost_micros), as text: `0.25 USD, 3 CREDITS`; `-` for none. */
export function formatCosts(costMicros: Record<string, bigint>): string {
  const parts = Object.entries(costMicros)
    .filter(([, micros]) => micros > 0n)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([currency, micros]) => formatMicros(micros, currency));
  return parts.length > 0 ? parts.join(", ") : "-";
}
