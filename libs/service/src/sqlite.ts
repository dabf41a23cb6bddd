/**
 * Loads `node:sqlite`. Node 22 and early 24 releases print an ExperimentalWarning when it loads;
 * the module is built in (no native build) and its synchronous API is what the index needs, so
 * exactly that one warning is dropped, and every other warning still reaches stderr.
 */
export async function loadSqlite(): Promise<typeof import("node:sqlite")> {
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === "string" ? warning : warning.message;
    const type = typeof rest[0] === "string" ? rest[0] : (rest[0] as { type?: string })?.type;
    if (type === "ExperimentalWarning" && /sqlite/i.test(text)) return;
    (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return await import("node:sqlite");
  } finally {
    process.emitWarning = emitWarning;
  }
}
