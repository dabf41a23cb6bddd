/** The argument keys whose values are secrets unless configured otherwise. */
export const defaultSecretKeyPatterns = ["password", "token", "secret", "api_key"] as const;

/** What a redacted value is replaced with. */
export const REDACTED = "[redacted]";

/** Lower case without `_`, `-` or spaces, so `api_key`, `apiKey` and `API-KEY` compare equal. */
function normaliseKey(key: string): string {
  return key.toLowerCase().replace(/[-_\s]/g, "");
}

/**
 * Returns a copy of a JSON value in which every object key containing one of the patterns
 * (case-insensitive, ignoring `_` and `-`, at any depth) has its value replaced by `[redacted]`.
 */
export function createSecretRedactor(
  patterns: readonly string[] = defaultSecretKeyPatterns,
): (value: unknown) => unknown {
  const needles = patterns.map(normaliseKey).filter((p) => p !== "");
  const isSecret = (key: string) => {
    const k = normaliseKey(key);
    return needles.some((n) => k.includes(n));
  };
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (value !== null && typeof value === "object") {
      const out: Record<string, unknown> = {};
      for (const [key, inner] of Object.entries(value as Record<string, unknown>)) {
        out[key] = isSecret(key) ? REDACTED : walk(inner);
      }
      return out;
    }
    return value;
  };
  return walk;
}
