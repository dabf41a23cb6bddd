import { readFileSync } from "node:fs";
import type { ParseArgsConfig } from "node:util";
import {
  type DescMessage,
  fromJson,
  type JsonValue,
  type MessageShape,
  toJson,
} from "@bufbuild/protobuf";
import { type Timestamp, timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { CallStatus } from "@toolmesh/proto";
import { parse as parseYaml } from "yaml";
import { type CliContext, UsageError } from "./context.js";

export type Flags = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** One runnable command, such as `toolmesh tools ls`. */
export interface Leaf {
  summary: string;
  /** The synopsis after `toolmesh`, such as `tools get <name>`. */
  usage: string;
  /** Lines under the synopsis in --help: options and an example. */
  details?: string[];
  options?: NonNullable<ParseArgsConfig["options"]>;
  /** How many positional arguments it takes. */
  args?: [min: number, max: number];
  /** Resolves with the exit code. */
  run(ctx: CliContext, args: string[], flags: Flags): Promise<number>;
}

/** A command with subcommands, such as `toolmesh tools`. */
export interface Group {
  summary: string;
  sub: Record<string, Leaf>;
}

export type Command = Leaf | Group;

/** A string flag's value, or undefined. */
export function flag(flags: Flags, name: string): string | undefined {
  const value = flags[name];
  return typeof value === "string" ? value : undefined;
}

/** Reads a YAML or JSON file (`-` is stdin) as a value; a UsageError names the file and the problem. */
export function readDocument(file: string | undefined, what: string): unknown {
  if (!file) throw new UsageError(`pass the ${what} with -f <file.yaml> (or -f - for stdin)`);
  let text: string;
  try {
    text = readFileSync(file === "-" ? 0 : file, "utf8");
  } catch (error) {
    throw new UsageError(
      `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
    );
  }
  try {
    return parseYaml(text);
  } catch (error) {
    throw new UsageError(`${file} is not valid YAML or JSON: ${(error as Error).message}`);
  }
}

/** A protobuf message from its JSON form (as YAML or JSON), or a UsageError saying which field is wrong. */
export function messageFrom<Desc extends DescMessage>(
  schema: Desc,
  value: unknown,
  source: string,
): MessageShape<Desc> {
  try {
    return fromJson(schema, value as JsonValue);
  } catch (error) {
    throw new UsageError(`${source} is not a valid ${schema.name}: ${(error as Error).message}`);
  }
}

/** A message in its JSON form, for --json output. */
export function jsonOf<Desc extends DescMessage>(
  schema: Desc,
  message: MessageShape<Desc>,
): JsonValue {
  return toJson(schema, message);
}

/** A timestamp for people: ISO 8601 to the second, or "-". */
export function when(ts: Timestamp | undefined): string {
  return ts
    ? timestampDate(ts)
        .toISOString()
        .replace(/\.\d{3}Z$/, "Z")
    : "-";
}

/** An enum value's name without its prefix (CALL_STATUS_SUCCESS → SUCCESS). */
export function enumName(names: Record<number, string>, value: number): string {
  return names[value] ?? String(value);
}

/** Reads every page of a list RPC. */
export async function allPages<T>(
  page: (token: string) => Promise<{ items: T[]; next: string }>,
): Promise<T[]> {
  const items: T[] = [];
  let token = "";
  do {
    const res = await page(token);
    items.push(...res.items);
    token = res.next;
  } while (token !== "");
  return items;
}

/** A --flag holding an ISO 8601 time, as a Timestamp (undefined when not given). */
export function isoTime(text: string | undefined, name: string): Timestamp | undefined {
  if (text === undefined) return undefined;
  const date = new Date(text);
  if (Number.isNaN(date.getTime()))
    throw new UsageError(
      `--${name} must be an ISO 8601 time such as 2030-01-31T08:00:00Z, got "${text}"`,
    );
  return timestampFromDate(date);
}

/** A --status flag as a CallStatus (UNSPECIFIED when not given). */
export function callStatus(text: string | undefined): CallStatus {
  if (text === undefined) return CallStatus.UNSPECIFIED;
  const value = CallStatus[text.toUpperCase() as keyof typeof CallStatus];
  if (typeof value !== "number" || value === 0)
    throw new UsageError(
      `unknown status "${text}"; use success, failure, interrupted, pending or refused`,
    );
  return value;
}
