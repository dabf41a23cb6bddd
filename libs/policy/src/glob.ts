/** Longest grant resource pattern accepted, in characters. */
export const MAX_PATTERN_LENGTH = 128;

const GLOB_CHARS = /^[a-z0-9_.*-]+$/;
const compiled = new Map<string, RegExp>();
/** Bounds the cache so a stream of distinct patterns cannot grow memory without end. */
const MAX_CACHED = 10_000;

/**
 * Why a glob over dotted tool names is invalid, or undefined when it is valid. Segments are
 * separated by dots and may not be empty; `*` matches within one segment, `**` across segments.
 */
export function globProblem(pattern: string): string | undefined {
  if (pattern === "") return "must not be empty";
  if (pattern.length > MAX_PATTERN_LENGTH)
    return `must be at most ${MAX_PATTERN_LENGTH} characters`;
  if (!GLOB_CHARS.test(pattern))
    return "may contain only a-z, 0-9, _, -, . and * (tool names are lowercase)";
  if (pattern.includes("***")) return "*** is not a glob; use * (one segment) or ** (any depth)";
  if (pattern.split(".").some((segment) => segment === ""))
    return "has an empty segment (two dots, or a leading or trailing dot)";
  return undefined;
}

/** A compiled glob (cached by pattern): `*` is `[^.]*`, `**` is `.*`, everything else literal. */
export function compileGlob(pattern: string): RegExp {
  let re = compiled.get(pattern);
  if (re) return re;
  let source = "^";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === "*") {
      if (pattern[i + 1] === "*") {
        source += ".*";
        i++;
      } else {
        source += "[^.]*";
      }
    } else {
      source += c.replace(/[.\-\\^$+?()[\]{}|]/g, "\\$&");
    }
  }
  re = new RegExp(`${source}$`);
  if (compiled.size >= MAX_CACHED) compiled.clear();
  compiled.set(pattern, re);
  return re;
}

/** True when the glob matches the tool name. */
export function globMatches(pattern: string, name: string): boolean {
  return compileGlob(pattern).test(name);
}
