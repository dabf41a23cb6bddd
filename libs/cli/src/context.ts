import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import type { DescService } from "@bufbuild/protobuf";
import { type CallOptions, type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { SERVICE_PORTS, type ServiceName, serviceUrls } from "@toolmesh/config";
import { parse as parseYaml } from "yaml";
import type { Output } from "./output.js";

/** A mistake in how the command was called: exit code 2, with what to type instead. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** What the CLI reads from a config file (YAML or JSON). */
interface FileConfig {
  token?: string;
  token_file?: string;
  dispatcher?: string;
  registry?: string;
  permission?: string;
  audit?: string;
  callback?: string;
  "tool-agent"?: string;
}

/** Everything a command needs: where the services are, the credential, and how to print. */
export class CliContext {
  readonly urls: Record<ServiceName, string>;
  /** The data directory of the stack `npm start` runs here (stack.json, admin.token). */
  readonly dataDir: string;
  private readonly token: string | undefined;
  private readonly clients = new Map<string, unknown>();

  constructor(
    readonly out: Output,
    options: { token?: string | undefined; config?: string | undefined; env: NodeJS.ProcessEnv },
  ) {
    const { env } = options;
    const file = loadConfigFile(options.config ?? env.TOOLMESH_CONFIG, env);
    const urls = serviceUrls(env);
    for (const name of Object.keys(urls) as ServiceName[]) {
      const fromFile = file[name];
      // The environment wins over the file, as the token does.
      const prefix = SERVICE_PORTS[name].env;
      if (fromFile && !env[`${prefix}_URL`] && !env[`${prefix}_PORT`])
        urls[name] = fromFile.replace(/\/+$/, "");
    }
    this.urls = urls;
    this.dataDir = env.TOOLMESH_DATA_DIR?.trim() || ".toolmesh";
    this.token =
      options.token ??
      (env.TOOLMESH_TOKEN?.trim() || undefined) ??
      file.token ??
      readToken(file.token_file) ??
      readToken(path.join(this.dataDir, "admin.token"));
  }

  /** A client of one service over gRPC (HTTP/2), made once. */
  client<S extends DescService>(service: ServiceName, desc: S): Client<S> {
    const key = `${service}/${desc.typeName}`;
    let client = this.clients.get(key) as Client<S> | undefined;
    if (!client) {
      client = createClient(desc, createGrpcTransport({ baseUrl: this.urls[service] }));
      this.clients.set(key, client);
    }
    return client;
  }

  /** Call options carrying the credential; UsageError when there is none. */
  auth(extra: CallOptions = {}): CallOptions {
    if (!this.token)
      throw new UsageError(
        "no credential: pass --token, set TOOLMESH_TOKEN, put token: in the config file, or run from the directory holding .toolmesh/admin.token",
      );
    return { ...extra, headers: { authorization: `Bearer ${this.token}` } };
  }
}

function loadConfigFile(explicit: string | undefined, env: NodeJS.ProcessEnv): FileConfig {
  const fallback = path.join(
    env.XDG_CONFIG_HOME ?? path.join(homedir(), ".config"),
    "toolmesh",
    "config.yaml",
  );
  const file = explicit ?? (existsSync(fallback) ? fallback : undefined);
  if (!file) return {};
  let parsed: unknown;
  try {
    parsed = parseYaml(readFileSync(file, "utf8"));
  } catch (error) {
    throw new UsageError(`cannot read the config file ${file}: ${(error as Error).message}`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
    throw new UsageError(`the config file ${file} must hold a mapping such as "token: …"`);
  return parsed as FileConfig;
}

function readToken(file: string | undefined): string | undefined {
  if (!file) return undefined;
  try {
    return readFileSync(file, "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}
