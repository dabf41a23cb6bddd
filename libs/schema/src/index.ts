import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { linearRegExpEngine } from "./linear-regexp.js";

export { canonicalJson, type JsonValue, schemaHash } from "./canonical.js";

// ajv-formats ships CommonJS; under NodeNext its default import is the module object.
type AddFormats = (ajv: Ajv2020) => Ajv2020;
const addFormats: AddFormats =
  (addFormatsModule as unknown as { default?: AddFormats }).default ??
  (addFormatsModule as unknown as AddFormats);

/** Raised when a schema does not compile; the message is ajv's. */
export class SchemaCompileError extends Error {
  override name = "SchemaCompileError";
}

function newAjv(): Ajv2020 {
  // Every `pattern` runs on RE2 (linear time), never on the backtracking RegExp engine.
  const ajv = new Ajv2020({
    strict: true,
    allErrors: true,
    logger: false,
    code: { regExp: linearRegExpEngine },
  });
  addFormats(ajv);
  return ajv;
}

// Building an ajv instance with formats costs milliseconds; one is shared for schemas without `$id`.
let shared: Ajv2020 | undefined;

/**
 * Compiles a JSON Schema (draft 2020-12) with ajv in strict mode plus ajv-formats. A schema with
 * a `$id` gets its own ajv instance, so one tool's `$id` cannot clash with another's; others use
 * a shared instance and are dropped from its cache once compiled (the caller keeps the function).
 */
export function compileSchema(schema: object): ValidateFunction {
  const own = typeof (schema as { $id?: unknown }).$id === "string";
  shared ??= newAjv();
  const ajv = own ? newAjv() : shared;
  try {
    return ajv.compile(schema);
  } catch (error) {
    throw new SchemaCompileError((error as Error).message, { cause: error });
  } finally {
    if (!own) ajv.removeSchema(schema);
  }
}

/** Compiled validators by schema hash, at most `limit` of them, least recently used dropped first. */
export class ValidatorCache {
  private readonly entries = new Map<string, ValidateFunction>();

  constructor(private readonly limit = 1000) {}

  /** The validator for `hash`, compiling `schema` on a miss; throws SchemaCompileError. */
  get(hash: string, schema: object): ValidateFunction {
    const hit = this.entries.get(hash);
    if (hit) {
      this.entries.delete(hash);
      this.entries.set(hash, hit);
      return hit;
    }
    const compiled = compileSchema(schema);
    this.entries.set(hash, compiled);
    if (this.entries.size > this.limit) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    return compiled;
  }

  get size(): number {
    return this.entries.size;
  }
}

export type { ValidateFunction } from "ajv";
export { linearRegExpEngine, MAX_PATTERN_LENGTH, PatternError } from "./linear-regexp.js";
export {
  type DefinitionPart,
  definitionChanges,
  pinBroken,
  recordDefinition,
  TOOL_HISTORY_LIMIT,
  toolDefinition,
} from "./tool-definition.js";
export { toViolations } from "./violations.js";
