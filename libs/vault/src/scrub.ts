import type { JsonObject, JsonValue } from "@bufbuild/protobuf";

/** What a hidden value reads as. */
export const REDACTED = "[redacted]";

/** Text with every secret value replaced, for messages an operator or a record may see. */
export function hideSecrets(text: string, values: readonly string[]): string {
  let hidden = text;
  for (const value of values) if (value !== "") hidden = hidden.split(value).join(REDACTED);
  return hidden;
}

/** A JSON object with every secret value hidden in its strings (keys included), or itself when none occurs. */
export function hideSecretsInJson(object: JsonObject, values: readonly string[]): JsonObject {
  const text = JSON.stringify(object);
  if (!values.some((value) => value !== "" && text.includes(value))) return object;
  return scrubValue(object, values) as JsonObject;
}

function scrubValue(value: JsonValue, values: readonly string[]): JsonValue {
  if (typeof value === "string") return hideSecrets(value, values);
  if (Array.isArray(value)) return value.map((v) => scrubValue(v, values));
  if (value !== null && typeof value === "object") {
    const out: JsonObject = {};
    for (const [key, v] of Object.entries(value))
      out[hideSecrets(key, values)] = scrubValue(v, values);
    return out;
  }
  return value;
}
