import type { JsonObject, JsonValue } from "@bufbuild/protobuf";

/** The JSON-RPC code of a request whose headers disagree with its body (SEP-2243). */
export const HEADER_MISMATCH = -32020;

const SENTINEL = /^=\?base64\?(.*)\?=$/;
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Where a tool's schema declares a parameter mirrored in a header (`x-mcp-header` on a property
 * reached through `properties` alone), and under which name.
 */
function declarations(
  schema: JsonObject | undefined,
  path: string[] = [],
): { path: string[]; header: string; type: string }[] {
  const properties = schema?.properties;
  if (!properties || typeof properties !== "object" || Array.isArray(properties)) return [];
  const found: { path: string[]; header: string; type: string }[] = [];
  for (const [name, property] of Object.entries(properties)) {
    if (!property || typeof property !== "object" || Array.isArray(property)) continue;
    const header = property["x-mcp-header"];
    if (typeof header === "string" && header !== "")
      found.push({ path: [...path, name], header, type: String(property.type ?? "string") });
    found.push(...declarations(property, [...path, name]));
  }
  return found;
}

/**
 * Why a 2026-07-28 tools/call's `Mcp-Param-*` headers disagree with its arguments, or undefined
 * when they agree: each parameter the tool mirrors in a header must come with that header, whose
 * value (literal, or `=?base64?…?=` in canonical Base64 of UTF-8) equals the argument.
 */
export function paramHeaderMismatch(
  schema: JsonObject | undefined,
  args: JsonObject,
  headers: Headers,
): { header: string; problem: string } | undefined {
  for (const { path, header, type } of declarations(schema)) {
    let value: JsonValue | undefined = args;
    for (const key of path)
      value = value && typeof value === "object" && !Array.isArray(value) ? value[key] : undefined;
    if (value === undefined || value === null || typeof value === "object") continue;
    const name = `Mcp-Param-${header}`;
    const raw = headers.get(name);
    if (raw === null)
      return { header: name, problem: `is absent; the arguments carry ${path.join(".")}` };
    const decoded = decode(raw.trim());
    if (decoded === undefined)
      return { header: name, problem: "carries a value that is not canonical Base64 of UTF-8" };
    const same =
      (type === "number" || type === "integer") && typeof value === "number"
        ? decoded.trim() !== "" && Number(decoded) === value
        : decoded === String(value);
    if (!same)
      return {
        header: name,
        problem: `says ${JSON.stringify(decoded)}, the arguments ${JSON.stringify(value)}`,
      };
  }
  return undefined;
}

function decode(value: string): string | undefined {
  const sentinel = SENTINEL.exec(value);
  if (!sentinel) return value;
  const base64 = sentinel[1] ?? "";
  if (!CANONICAL_BASE64.test(base64)) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(base64, "base64"));
  } catch {
    return undefined;
  }
}
