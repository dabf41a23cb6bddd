import { createHash } from "node:crypto";

/** A JSON value as a schema holds it. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };

/** JSON with object keys sorted at every level and no whitespace: one text per value. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.keys(value as Record<string, unknown>)
    .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
    .sort()
    .map(
      (key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`,
    );
  return `{${entries.join(",")}}`;
}

/**
 * SHA-256 (hex) of the canonical JSON of `{"input": <input schema>, "output": <output schema or null>}`:
 * the Tool.schema_hash the Registry stores and the key of compiled-validator caches.
 */
export function schemaHash(input: unknown, output?: unknown): string {
  return createHash("sha256")
    .update(canonicalJson({ input: input ?? null, output: output ?? null }))
    .digest("hex");
}
