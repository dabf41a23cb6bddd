const PLAIN_TOKEN = /^[A-Za-z0-9_-]+$/;

/**
 * Escapes user data for one KV key token. KV keys allow [-/_=.a-zA-Z0-9]; a dot separates
 * levels, so anything else, and the escape character `=` itself, becomes =XX (UTF-8).
 */
export function kvKeyToken(value: string): string {
  // The common case, a plain id or name, needs no escaping (and no per-byte work on a hot path).
  if (PLAIN_TOKEN.test(value)) return value;
  let out = "";
  for (const byte of new TextEncoder().encode(value)) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9_-]/.test(c) ? c : `=${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out === "" ? "=00" : out;
}
