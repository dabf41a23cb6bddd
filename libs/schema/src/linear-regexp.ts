import { createRequire } from "node:module";

/**
 * JSON Schema `pattern`s run on RE2 (re2-wasm: WebAssembly in the npm package, nothing built or
 * downloaded at install), whose matching time is linear in the input: a pattern such as
 * `^(a+)+$` cannot hold the event loop, whatever the argument. RE2 has no backreferences or
 * lookaround; a schema using them does not compile and is refused at registration.
 */

/** The longest pattern accepted; longer ones are refused at registration. */
export const MAX_PATTERN_LENGTH = 1024;

/** Compiled patterns kept at once; RE2 programs live in a fixed 16 MiB WebAssembly heap. */
const MAX_COMPILED = 256;

/**
 * The patterns of JSON Schema's own meta-schemas (`$id`, `$anchor`), which every schema is checked
 * against: one character class and one optional character between anchors, linear on RegExp too.
 * They run natively, so a process whose tool schemas have no `pattern` never loads the engine
 * (about 15 MB of memory: its compiled code and heap).
 */
const META_SCHEMA_PATTERNS = new Set(["^[^#]*#?$", "^[A-Za-z_][-A-Za-z0-9._]*$"]);

/** Patterns that exhausted the engine's heap, refused from then on without another try. */
const MAX_REMEMBERED_FAILURES = 1024;

interface Re2Instance {
  test(input: string): boolean;
  /** The embind handle; must be deleted to free its WebAssembly memory. */
  wrapper?: { delete(): void };
}
type Re2Constructor = new (pattern: string, flags: string) => Re2Instance;

const require = createRequire(import.meta.url);

/**
 * One instance of the WebAssembly module. Its heap cannot grow: a program that does not fit
 * aborts the instance, which is then dropped and a fresh one loaded.
 */
class Engine {
  private readonly compiled = new Map<string, Re2Instance>();
  private readonly RE2: Re2Constructor;

  constructor() {
    // A fresh evaluation of the emscripten module gets a fresh heap.
    for (const id of [require.resolve("re2-wasm"), require.resolve("re2-wasm/build/wasm/re2.js")])
      delete require.cache[id];
    this.RE2 = (require("re2-wasm") as { RE2: Re2Constructor }).RE2;
  }

  /** The compiled pattern, least recently used dropped (and freed) past MAX_COMPILED. */
  get(pattern: string): Re2Instance {
    const hit = this.compiled.get(pattern);
    if (hit) {
      this.compiled.delete(pattern);
      this.compiled.set(pattern, hit);
      return hit;
    }
    const re = new this.RE2(pattern, "u");
    this.compiled.set(pattern, re);
    if (this.compiled.size > MAX_COMPILED) {
      const [oldest, dropped] = this.compiled.entries().next().value as [string, Re2Instance];
      this.compiled.delete(oldest);
      dropped.wrapper?.delete();
    }
    return re;
  }
}

let engine: Engine | undefined;
const exhausted = new Set<string>();

/** True for the RuntimeError an emscripten module throws when it aborts (out of heap). */
function isAbort(error: unknown): boolean {
  return (
    (error instanceof Error && error.constructor.name === "RuntimeError") ||
    /abort\(/.test(String(error))
  );
}

/** Raised when a pattern is refused: too long, not RE2 syntax, or too large for the engine. */
export class PatternError extends Error {
  override name = "PatternError";
}

/** Runs `use` on the compiled pattern, replacing an aborted engine once. */
function withPattern<T>(pattern: string, use: (re: Re2Instance) => T): T {
  if (exhausted.has(pattern))
    throw new PatternError(`pattern /${pattern}/ needs more memory than the pattern engine allows`);
  for (let attempt = 0; ; attempt++) {
    engine ??= new Engine();
    try {
      return use(engine.get(pattern));
    } catch (error) {
      if (!isAbort(error)) {
        if (error instanceof SyntaxError) throw new PatternError(error.message, { cause: error });
        throw error;
      }
      engine = undefined;
      if (attempt > 0) {
        if (exhausted.size >= MAX_REMEMBERED_FAILURES) exhausted.clear();
        exhausted.add(pattern);
        throw new PatternError(
          `pattern /${pattern}/ needs more memory than the pattern engine allows; simplify it (fewer or smaller repetitions, narrower classes)`,
          { cause: error },
        );
      }
    }
  }
}

/** What ajv's `code.regExp` option calls for every `pattern`: a linear-time matcher. */
function linearRegExp(
  pattern: string,
  flags: string,
): { test(input: string): boolean; toString(): string } {
  if (pattern.length > MAX_PATTERN_LENGTH)
    throw new PatternError(
      `pattern is ${pattern.length} characters; at most ${MAX_PATTERN_LENGTH} allowed`,
    );
  if (flags !== "" && flags !== "u")
    throw new PatternError(`pattern flags "${flags}" are not supported`);
  if (META_SCHEMA_PATTERNS.has(pattern)) return new RegExp(pattern, "u");
  // Compiled now, so a bad pattern fails when the schema compiles, not on a call.
  withPattern(pattern, () => undefined);
  return {
    test: (input) => withPattern(pattern, (re) => re.test(input)),
    // ajv shares one matcher per toString() within an instance: it must name the pattern.
    toString: () => `/${pattern}/u`,
  };
}

/** ajv's RegExpEngine: the function and the code standalone validators would import. */
export const linearRegExpEngine = Object.assign(linearRegExp, {
  code: 'require("@toolmesh/schema").linearRegExpEngine',
});
