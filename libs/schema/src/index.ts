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

/**
 * Keywords ajv does not know that a valid tool schema may carry, kept as annotations: 2020-12's
 * `$anchor`, and MCP's `x-mcp-header` (a parameter mirrored in an HTTP header).
 */
const ANNOTATIONS = ["$anchor", "x-mcp-header"];

function newAjv(): Ajv2020 {
  // Every `pattern` runs on RE2 (linear time), never on the backtracking RegExp engine.
  const ajv = new Ajv2020({
    // Strict catches mistyped keywords; a `required` naming a property defined beside it (in
    // allOf/anyOf/if, as 2020-12 schemas do) is valid JSON Schema, not a mistake.
    strict: true,
    strictRequired: false,
    allErrors: true,
    logger: false,
    code: { regExp: linearRegExpEngine },
  });
  addFormats(ajv);
  for (const keyword of ANNOTATIONS) ajv.addKeyword({ keyword, schemaType: "string" });
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
    const validate = ajv.compile(schema);
    const undefinedName = undefinedRequired(schema);
    if (undefinedName !== undefined)
      throw new SchemaCompileError(
        `strict mode: required property "${undefinedName}" is not defined in any "properties" of the schema`,
      );
    return validate;
  } catch (error) {
    if (error instanceof SchemaCompileError) throw error;
    throw new SchemaCompileError((error as Error).message, { cause: error });
  } finally {
    if (!own) ajv.removeSchema(schema);
  }
}

/**
 * A name some `required` lists that no `properties` of the schema defines (a typo, as ajv's
 * strictRequired catches), or undefined. Unlike strictRequired it accepts a `required` beside the
 * properties it names, as allOf, anyOf and if/then do in 2020-12 schemas.
 */
function undefinedRequired(schema: object): string | undefined {
  const defined = new Set<string>();
  const required: string[] = [];
  const walk = (node: unknown, depth: number) => {
    if (depth > 32 || node === null || typeof node !== "object") return;
    if (Array.isArray(node)) {
      for (const item of node) walk(item, depth + 1);
      return;
    }
    const object = node as Record<string, unknown>;
    const properties = object.properties;
    if (properties !== null && typeof properties === "object" && !Array.isArray(properties))
      for (const name of Object.keys(properties)) defined.add(name);
    if (Array.isArray(object.required))
      for (const name of object.required) if (typeof name === "string") required.push(name);
    for (const [key, value] of Object.entries(object))
      if (key !== "required" && key !== "enum" && key !== "const" && key !== "default")
        walk(value, depth + 1);
  };
  walk(schema, 0);
  return required.find((name) => !defined.has(name));
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
