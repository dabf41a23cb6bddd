import { create } from "@bufbuild/protobuf";
import { invalidField } from "@toolmesh/errors";
import {
  checkLength,
  checkPrincipalId,
  checkRole,
  checkScope,
  checkToolName,
} from "@toolmesh/names";
import {
  type Group,
  GroupSchema,
  type ToolSpec,
  ToolSpecSchema,
  ToolStatus,
} from "@toolmesh/proto";
import { SchemaCompileError, schemaHash, type ValidatorCache } from "@toolmesh/schema";
import { injectionProblem } from "@toolmesh/vault";
import { checkDockerRuntime } from "./docker-validation.js";
import { ENV_KEY, maxCount, maxLength } from "./field-checks.js";
import { checkOperation, checkSupervision, operationLimits } from "./operation-checks.js";

/** Size limits of a tool or group; a value over a limit is INVALID_ARGUMENT naming the field. */
export const limits = {
  versionLength: 64,
  descriptionBytes: 4096,
  categoryLength: 64,
  schemaBytes: 64 * 1024,
  scopes: 32,
  knowhubSlugs: 32,
  reporters: 16,
  approverRoles: 16,
  /** Secrets one tool may name. */
  secrets: 16,
  labels: 32,
  labelKeyLength: 63,
  labelValueLength: 256,
  timeoutMs: 10 * 60 * 1000,
  retryAttempts: 10,
  backoffMs: 60_000,
  addressLength: 256,
  commandLength: 1024,
  args: 64,
  argLength: 4096,
  envEntries: 64,
  envKeyLength: 256,
  envValueLength: 4096,
  workingDirLength: 1024,
  httpPathLength: 256,
  maxConcurrency: operationLimits.maxConcurrency,
  idleTimeoutMs: operationLimits.idleTimeoutMs,
  urlLength: 2048,
  headers: 32,
  headerNameLength: 256,
  headerValueLength: 4096,
  groupTools: 100,
  groupExampleBytes: 16 * 1024,
} as const;

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const LABEL_KEY = /^[a-z0-9]([a-z0-9_./-]*[a-z0-9])?$/;

const utf8 = new TextEncoder();

/** What validation derives from a spec: the spec with defaults applied and its schema hash. */
export interface CheckedSpec {
  spec: ToolSpec;
  schemaHash: string;
}

/**
 * Validates a ToolSpec as written by an operator and returns a normalised copy (status
 * unspecified becomes ACTIVE). Every failure is INVALID_ARGUMENT naming the field under `tool.`.
 */
export function checkToolSpec(spec: ToolSpec | undefined, validators: ValidatorCache): CheckedSpec {
  if (!spec) throw invalidField("tool", "is required");
  checkToolName("tool.name", spec.name);
  maxLength("tool.version", spec.version, limits.versionLength);
  if (spec.description.trim() === "")
    throw invalidField(
      "tool.description",
      "is required: say what the tool does, for a language model",
    );
  const descriptionBytes = utf8.encode(spec.description).length;
  if (descriptionBytes > limits.descriptionBytes)
    throw invalidField(
      "tool.description",
      `is ${descriptionBytes} bytes; at most ${limits.descriptionBytes} allowed`,
    );
  maxLength("tool.category", spec.category, limits.categoryLength);

  if (!spec.inputSchema)
    throw invalidField("tool.input_schema", 'is required: a JSON Schema with "type": "object"');
  checkSchema("tool.input_schema", spec.inputSchema, validators, true);
  if (spec.outputSchema) checkSchema("tool.output_schema", spec.outputSchema, validators, false);

  maxCount("tool.required_scopes", spec.requiredScopes.length, limits.scopes);
  spec.requiredScopes.forEach((scope, i) => {
    checkScope(`tool.required_scopes[${i}]`, scope);
  });
  if (new Set(spec.requiredScopes).size !== spec.requiredScopes.length)
    throw invalidField("tool.required_scopes", "lists a scope twice");

  if (spec.timeoutMs > limits.timeoutMs)
    throw invalidField(
      "tool.timeout_ms",
      `is ${spec.timeoutMs}; at most ${limits.timeoutMs} (10 minutes) allowed`,
    );
  const retry = spec.retryPolicy;
  if (retry) {
    if (retry.maxAttempts > limits.retryAttempts)
      throw invalidField(
        "tool.retry_policy.max_attempts",
        `is ${retry.maxAttempts}; at most ${limits.retryAttempts} allowed`,
      );
    if (retry.initialBackoffMs > limits.backoffMs)
      throw invalidField(
        "tool.retry_policy.initial_backoff_ms",
        `is ${retry.initialBackoffMs}; at most ${limits.backoffMs} allowed`,
      );
    if (retry.maxBackoffMs > limits.backoffMs)
      throw invalidField(
        "tool.retry_policy.max_backoff_ms",
        `is ${retry.maxBackoffMs}; at most ${limits.backoffMs} allowed`,
      );
    if (retry.maxBackoffMs > 0 && retry.initialBackoffMs > retry.maxBackoffMs)
      throw invalidField("tool.retry_policy.initial_backoff_ms", "is larger than max_backoff_ms");
  }

  checkSlugs("tool.knowhub_slugs", spec.knowhubSlugs);
  maxCount("tool.reporters", spec.reporters.length, limits.reporters);
  spec.reporters.forEach((id, i) => {
    checkPrincipalId(`tool.reporters[${i}]`, id);
  });
  maxCount("tool.approver_roles", spec.approverRoles.length, limits.approverRoles);
  spec.approverRoles.forEach((role, i) => {
    checkRole(`tool.approver_roles[${i}]`, role);
  });

  const labels = Object.entries(spec.labels);
  maxCount("tool.labels", labels.length, limits.labels);
  for (const [key, value] of labels) {
    if (key.length > limits.labelKeyLength || !LABEL_KEY.test(key))
      throw invalidField(
        `tool.labels[${JSON.stringify(key)}]`,
        `key must be 1-${limits.labelKeyLength} lowercase letters, digits, _ . / -`,
      );
    maxLength(`tool.labels[${JSON.stringify(key)}]`, value, limits.labelValueLength);
  }

  if (spec.status !== ToolStatus.UNSPECIFIED && !(spec.status in ToolStatus))
    throw invalidField("tool.status", `${spec.status} is not a ToolStatus`);
  checkRuntime(spec);
  checkOperation(spec);
  checkSecretInjections(spec);

  const normalised = create(ToolSpecSchema, spec);
  if (normalised.status === ToolStatus.UNSPECIFIED) normalised.status = ToolStatus.ACTIVE;
  return { spec: normalised, schemaHash: schemaHash(spec.inputSchema, spec.outputSchema) };
}

/** Checks knowledge-hub slugs (count, each non-empty and within its limit); returns them. */
export function checkSlugs(field: string, slugs: string[]): string[] {
  maxCount(field, slugs.length, limits.knowhubSlugs);
  slugs.forEach((slug, i) => {
    if (slug === "") throw invalidField(`${field}[${i}]`, "is empty");
    checkLength(`${field}[${i}]`, "knowhubSlug", slug);
  });
  return [...slugs];
}

function checkSchema(
  field: string,
  schema: object,
  validators: ValidatorCache,
  mustBeObject: boolean,
): void {
  const bytes = utf8.encode(JSON.stringify(schema)).length;
  if (bytes > limits.schemaBytes)
    throw invalidField(field, `is ${bytes} bytes of JSON; at most ${limits.schemaBytes} allowed`);
  if (mustBeObject && (schema as { type?: unknown }).type !== "object")
    throw invalidField(field, 'must be an object schema: set "type": "object" at the top level');
  try {
    validators.get(schemaHash(schema), schema);
  } catch (error) {
    if (error instanceof SchemaCompileError)
      throw invalidField(field, `does not compile (ajv, strict mode): ${error.message}`);
    throw error;
  }
}

function checkRuntime(spec: ToolSpec): void {
  const kind = spec.runtime?.kind;
  if (!kind || kind.case === undefined)
    throw invalidField(
      "tool.runtime",
      "is required: set exactly one of grpc, local, remote, docker or mcp",
    );
  switch (kind.case) {
    case "grpc": {
      const address = kind.value.address;
      const field = "tool.runtime.grpc.address";
      if (address === "")
        throw invalidField(field, "is required: host:port such as 127.0.0.1:7200");
      maxLength(field, address, limits.addressLength);
      const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(address);
      const portNumber = Number(match?.[2] ?? 0);
      if (!match || portNumber < 1 || portNumber > 65535)
        throw invalidField(field, `"${address}" is not host:port (such as 127.0.0.1:7200)`);
      return;
    }
    case "local": {
      const local = kind.value;
      if (local.command.trim() === "")
        throw invalidField("tool.runtime.local.command", "is required: the executable to start");
      maxLength("tool.runtime.local.command", local.command, limits.commandLength);
      maxCount("tool.runtime.local.args", local.args.length, limits.args);
      local.args.forEach((arg, i) => {
        maxLength(`tool.runtime.local.args[${i}]`, arg, limits.argLength);
      });
      checkEnv("tool.runtime.local.env", local.env);
      maxLength("tool.runtime.local.working_dir", local.workingDir, limits.workingDirLength);
      if (local.httpPath !== "") {
        maxLength("tool.runtime.local.http_path", local.httpPath, limits.httpPathLength);
        if (!local.httpPath.startsWith("/"))
          throw invalidField("tool.runtime.local.http_path", 'must start with "/"');
      }
      checkSupervision((field) => `tool.runtime.local.${field}`, local);
      return;
    }
    case "remote": {
      const remote = kind.value;
      checkUrl("tool.runtime.remote.url", remote.url);
      checkHeaders("tool.runtime.remote.headers", remote.headers);
      return;
    }
    case "docker":
      checkDockerRuntime(kind.value, limits);
      return;
    case "mcp": {
      const mcp = kind.value;
      if (mcp.tool === "")
        throw invalidField(
          "tool.runtime.mcp.tool",
          "is required: the tool's name on the MCP server",
        );
      maxLength("tool.runtime.mcp.tool", mcp.tool, limits.commandLength);
      if ((mcp.url === "") === (mcp.command.trim() === ""))
        throw invalidField(
          "tool.runtime.mcp",
          "set exactly one of url (streamable HTTP) and command (stdio)",
        );
      if (mcp.url !== "") checkUrl("tool.runtime.mcp.url", mcp.url);
      else {
        maxLength("tool.runtime.mcp.command", mcp.command, limits.commandLength);
        maxCount("tool.runtime.mcp.args", mcp.args.length, limits.args);
        mcp.args.forEach((arg, i) => {
          maxLength(`tool.runtime.mcp.args[${i}]`, arg, limits.argLength);
        });
        maxLength("tool.runtime.mcp.working_dir", mcp.workingDir, limits.workingDirLength);
      }
      checkEnv("tool.runtime.mcp.env", mcp.env);
      checkHeaders("tool.runtime.mcp.headers", mcp.headers);
      if (mcp.idleTimeoutMs > limits.idleTimeoutMs)
        throw invalidField(
          "tool.runtime.mcp.idle_timeout_ms",
          `is ${mcp.idleTimeoutMs}; at most ${limits.idleTimeoutMs} (24 hours) allowed`,
        );
      return;
    }
  }
}

/** Checks the secrets a tool names: each one source, a target its runtime can take, no repeats. */
function checkSecretInjections(spec: ToolSpec): void {
  maxCount("tool.secrets", spec.secrets.length, limits.secrets);
  const kind = spec.runtime?.kind;
  const mcpOverHttp = kind?.case === "mcp" && kind.value.url !== "";
  const targets = new Set<string>();
  spec.secrets.forEach((injection, i) => {
    const field = `tool.secrets[${i}]`;
    if (injection.secret !== "") checkToolName(`${field}.secret`, injection.secret);
    if (injection.oauthProvider !== "")
      checkToolName(`${field}.oauth_provider`, injection.oauthProvider);
    const problem = injectionProblem(injection, kind?.case, mcpOverHttp);
    if (problem) throw invalidField(field, problem);
    maxLength(`${field}.prefix`, injection.prefix, 64);
    const target = `${injection.target.case}:${String(injection.target.value).toLowerCase()}`;
    if (targets.has(target))
      throw invalidField(
        field,
        `${injection.target.case} ${injection.target.value} is given a value twice`,
      );
    targets.add(target);
  });
}

function checkUrl(field: string, url: string): void {
  if (url === "") throw invalidField(field, "is required: an http:// or https:// URL");
  maxLength(field, url, limits.urlLength);
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:"))
    throw invalidField(field, `"${url}" is not an http:// or https:// URL`);
}

function checkHeaders(field: string, headers: Record<string, string>): void {
  const entries = Object.entries(headers);
  maxCount(field, entries.length, limits.headers);
  for (const [name, value] of entries) {
    const headerField = `${field}[${JSON.stringify(name)}]`;
    if (name.length > limits.headerNameLength || !HEADER_NAME.test(name))
      throw invalidField(headerField, "is not an HTTP header name");
    maxLength(headerField, value, limits.headerValueLength);
  }
}

function checkEnv(field: string, env: Record<string, string>): void {
  const entries = Object.entries(env);
  maxCount(field, entries.length, limits.envEntries);
  for (const [key, value] of entries) {
    const keyField = `${field}[${JSON.stringify(key)}]`;
    if (key.length > limits.envKeyLength || !ENV_KEY.test(key))
      throw invalidField(keyField, "is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)");
    maxLength(keyField, value, limits.envValueLength);
  }
}

/** Validates a group as written by an operator; tool existence is checked by the handler. */
export function checkGroup(group: Group | undefined): Group {
  if (!group) throw invalidField("group", "is required");
  checkToolName("group.name", group.name);
  const descriptionBytes = utf8.encode(group.description).length;
  if (descriptionBytes > limits.descriptionBytes)
    throw invalidField(
      "group.description",
      `is ${descriptionBytes} bytes; at most ${limits.descriptionBytes} allowed`,
    );
  const exampleBytes = utf8.encode(group.example).length;
  if (exampleBytes > limits.groupExampleBytes)
    throw invalidField(
      "group.example",
      `is ${exampleBytes} bytes; at most ${limits.groupExampleBytes} allowed`,
    );
  maxCount("group.tools", group.tools.length, limits.groupTools);
  const seen = new Set<string>();
  group.tools.forEach((name, i) => {
    checkToolName(`group.tools[${i}]`, name);
    if (seen.has(name))
      throw invalidField(
        "group.tools",
        `lists "${name}" twice; each tool appears once, in usage order`,
      );
    seen.add(name);
  });
  return create(GroupSchema, group);
}
