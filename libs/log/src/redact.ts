/**
 * The one redaction rule of toolmesh, used for log lines, audit records, trace events and
 * memory files alike (docs/security.md). A value is hidden when its key names a secret, or when
 * the value itself looks like one.
 */

/**
 * Key patterns whose values are secrets. Keys are compared in lower case without `_`, `-`, `.`
 * or spaces; a pattern of up to four characters (`auth`, `pwd`) must equal the whole key, a
 * longer one may appear anywhere in it (`client_secret`, `X-Api-Key`, `refresh_token`). A key
 * naming where a secret is kept, ending in `file` or `path` (`admin_token_file`), is not one.
 */
export const defaultSecretKeyPatterns = [
  "password",
  "passwd",
  "pwd",
  "passphrase",
  "secret",
  "token",
  "apikey",
  "accesskey",
  "privatekey",
  "credential",
  "authorization",
  "auth",
  "cookie",
  "session",
  "bearer",
  "signature",
] as const;

/** What a redacted value is replaced with. */
export const REDACTED = "[redacted]";

/** Values that are secrets whatever their key: bearer tokens, JWTs, toolmesh keys, PEM keys. */
const SECRET_VALUES: RegExp[] = [
  /\bBearer\s+[A-Za-z0-9._~+/=-]{8,}/i,
  /\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/,
  /\btmk_[A-Za-z0-9_-]{8,}/,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----/,
];

/** Strings longer than this are not scanned for secret values past this many characters. */
const SCAN_LIMIT = 64 * 1024;

/** Lower case without `_`, `-`, `.` or spaces, so `api_key`, `apiKey` and `API-KEY` compare equal. */
function normaliseKey(key: string): string {
  return key.toLowerCase().replace(/[-_.\s]/g, "");
}

/** True when a string value looks like a credential, whatever key it is under. */
export function looksSecret(value: string): boolean {
  const text = value.length > SCAN_LIMIT ? value.slice(0, SCAN_LIMIT) : value;
  return SECRET_VALUES.some((pattern) => pattern.test(text));
}

/** Replaces every credential-looking part of a free-text string (a log message). */
export function redactText(value: string): string {
  if (!looksSecret(value)) return value;
  let out = value;
  for (const pattern of SECRET_VALUES) {
    if (pattern.source.startsWith("-----")) {
      out = out.replace(
        /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)/g,
        REDACTED,
      );
    } else {
      out = out.replace(new RegExp(pattern.source, `${pattern.flags}g`), REDACTED);
    }
  }
  return out;
}

/** A predicate telling whether a key names a secret, for the default patterns plus `extra`. */
export function secretKeyMatcher(extra: readonly string[] = []): (key: string) => boolean {
  const needles = [...new Set([...defaultSecretKeyPatterns, ...extra].map(normaliseKey))].filter(
    (p) => p !== "",
  );
  const whole = new Set(needles.filter((n) => n.length <= 4));
  const inside = needles.filter((n) => n.length > 4);
  return (key) => {
    const k = normaliseKey(key);
    if (k.endsWith("file") || k.endsWith("path")) return false;
    return whole.has(k) || inside.some((n) => k.includes(n));
  };
}

/**
 * Returns a copy of a JSON value in which every value under a secret key (at any depth), and
 * every part of a string that looks like a credential, is replaced by `[redacted]`. Every key is kept,
 * `__proto__` included (as an own property), so a record shows every argument that was sent.
 * `extraKeys` add to the default key patterns; they never remove one.
 */
export function createSecretRedactor(
  extraKeys: readonly string[] = [],
): (value: unknown) => unknown {
  const isSecretKey = secretKeyMatcher(extraKeys);
  const walk = (value: unknown): unknown => {
    if (typeof value === "string") return redactText(value);
    if (Array.isArray(value)) return value.map(walk);
    if (value !== null && typeof value === "object" && isPlainObject(value)) {
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(value)) {
        const inner = (value as Record<string, unknown>)[key];
        // defineProperty, not assignment: `out["__proto__"] = x` would set the prototype and drop the key.
        Object.defineProperty(out, key, {
          value: isSecretKey(key) ? REDACTED : walk(inner),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      return out;
    }
    return value;
  };
  return walk;
}

/** Plain data objects (JSON, protobuf JsonObject); class instances such as Error pass through. */
function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
