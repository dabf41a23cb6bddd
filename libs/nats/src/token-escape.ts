/** Characters a subject or key token keeps as they are; every other one is escaped. */
const ESCAPED = /[^A-Za-z0-9_-]/gu;
const utf8 = new TextEncoder();

/**
 * Escapes `value` for one token: [A-Za-z0-9_-] stay, every UTF-8 byte of any other character
 * becomes `mark` and two upper-case hex digits. One pass over the string, touching only what it
 * escapes: a tool's name is escaped on every broadcast and usage key, and its dot made the old
 * per-byte loop a tenth of what Callback allocated.
 */
export function escapeToken(value: string, mark: string): string {
  return value.replace(ESCAPED, (c) => {
    const code = c.charCodeAt(0);
    if (code < 0x80) return mark + hex(code);
    let out = "";
    for (const byte of utf8.encode(c)) out += mark + hex(byte);
    return out;
  });
}

function hex(byte: number): string {
  return byte < 16 ? `0${byte.toString(16).toUpperCase()}` : byte.toString(16).toUpperCase();
}
