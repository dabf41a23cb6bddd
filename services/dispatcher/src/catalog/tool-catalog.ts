import type { JsonObject } from "@bufbuild/protobuf";
import { buckets } from "@toolmesh/nats";
import type { PolicyTool } from "@toolmesh/policy";
import type { Tool } from "@toolmesh/proto";
import { SchemaCompileError, type ValidateFunction, ValidatorCache } from "@toolmesh/schema";
import { ToolNames } from "./tool-names.js";

/** Reads tools by name; the KvSnapshot of the registry bucket in production, a Map in tests. */
export interface ToolSource {
  readonly isReady: boolean;
  get(key: string): Tool | undefined;
  values(): IterableIterator<Tool>;
  /** Calls the listener after every change (the MCP server's listChanged); returns an unsubscribe. */
  onChange?(listener: () => void): () => void;
}

/** The two validators of a tool, compiled once per schema hash. */
export interface ToolValidators {
  input: ValidateFunction | undefined;
  output: ValidateFunction | undefined;
}

/**
 * The tools of the registry snapshot and their compiled schemas. Validators are cached by
 * schema_hash, so a schema compiles once however many calls use it.
 */
export class ToolCatalog {
  private readonly compiled = new ValidatorCache(2000);
  private readonly validators = new Map<string, ToolValidators>();
  private readonly policyViews = new WeakMap<Tool, PolicyTool>();
  private readonly names = new ToolNames(this);

  constructor(private readonly source: ToolSource) {}

  /** The registry name a model's name stands for: itself, or the tool exported as `data__query`. */
  resolve(name: string): string {
    return this.names.resolve(name);
  }

  get isReady(): boolean {
    return this.source.isReady;
  }

  get(name: string): Tool | undefined {
    return this.source.get(buckets.registry.toolKey(name));
  }

  all(): IterableIterator<Tool> {
    return this.source.values();
  }

  /** The tool as a permission decision reads it, built once per snapshot value. */
  policyView(tool: Tool): PolicyTool {
    let view = this.policyViews.get(tool);
    if (!view) {
      view = {
        name: tool.spec?.name ?? "",
        requiredScopes: tool.spec?.requiredScopes ?? [],
        groups: tool.groups,
      };
      this.policyViews.set(tool, view);
    }
    return view;
  }

  /** Compiled validators of the tool (cached by schema hash); throws SchemaCompileError. */
  validatorsOf(tool: Tool): ToolValidators {
    const key = tool.schemaHash || `${tool.spec?.name}@${tool.revision}`;
    let cached = this.validators.get(key);
    if (!cached) {
      cached = {
        input: this.compile(`${key}:input`, tool.spec?.inputSchema),
        output: this.compile(`${key}:output`, tool.spec?.outputSchema),
      };
      this.validators.set(key, cached);
    }
    return cached;
  }

  private compile(key: string, schema: JsonObject | undefined): ValidateFunction | undefined {
    if (!schema || Object.keys(schema).length === 0) return undefined;
    return this.compiled.get(key, schema);
  }
}

export { SchemaCompileError };

/** A map-backed ToolSource, for tests and tools defined in code. */
export class MemoryToolSource implements ToolSource {
  readonly map = new Map<string, Tool>();
  isReady = true;
  put(tool: Tool): void {
    this.map.set(buckets.registry.toolKey(tool.spec?.name ?? ""), tool);
  }
  get(key: string): Tool | undefined {
    return this.map.get(key);
  }
  values(): IterableIterator<Tool> {
    return this.map.values();
  }
}
