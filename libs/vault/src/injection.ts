import type { SecretInjection } from "@toolmesh/proto";

/** Header names a secret may not take: they frame the request or carry toolmesh's own ids. */
const RESERVED_HEADERS =
  /^(host|content-length|content-type|transfer-encoding|connection|traceparent|x-toolmesh-.*)$/i;
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const FILE_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/** The runtime kinds' words, as `Runtime.kind.case` names them. */
export type RuntimeWord = "grpc" | "local" | "remote" | "docker" | "mcp";

/**
 * Why an injection cannot work for a runtime, or undefined when it can: headers and query
 * parameters go over HTTP (remote tools, MCP servers over HTTP), environment variables and files
 * to a process the Dispatcher starts (local and docker tools, MCP servers over stdio: env only).
 */
export function injectionProblem(
  injection: SecretInjection,
  runtime: RuntimeWord | undefined,
  mcpOverHttp: boolean,
): string | undefined {
  const sources = (injection.secret ? 1 : 0) + (injection.oauthProvider ? 1 : 0);
  if (sources !== 1) return "must name exactly one of secret and oauth_provider";
  const target = injection.target;
  switch (target.case) {
    case "header":
      if (!HEADER_NAME.test(target.value)) return "header must be an HTTP header name";
      if (RESERVED_HEADERS.test(target.value))
        return `header ${target.value} is set by the Dispatcher itself; pick another`;
      if (runtime === "remote" || (runtime === "mcp" && mcpOverHttp)) return undefined;
      return "header applies to remote tools and MCP servers over HTTP only";
    case "query":
      if (!HEADER_NAME.test(target.value)) return "query must be a parameter name";
      return runtime === "remote" ? undefined : "query applies to remote tools only";
    case "env":
      if (!ENV_NAME.test(target.value)) return "env must be an environment variable name";
      if (/^(TOOLMESH_|NATS_)/.test(target.value))
        return `env ${target.value} is in the Dispatcher's own namespace; pick another name`;
      if (runtime === "local" || runtime === "docker" || (runtime === "mcp" && !mcpOverHttp))
        return undefined;
      return "env applies to local and docker tools and MCP servers over stdio only";
    case "file":
      if (!FILE_NAME.test(target.value) || target.value === "." || target.value === "..")
        return "file must be 1-128 characters of A-Z, a-z, 0-9, _, . and -";
      return runtime === "local" || runtime === "docker"
        ? undefined
        : "file applies to local and docker tools only";
    default:
      return "must say where the value goes: header, query, env or file";
  }
}

/** The text injected: the prefix (an OAuth token in a header defaults to `Bearer `) and the value. */
export function injectedText(injection: SecretInjection, value: string): string {
  const prefix =
    injection.prefix ||
    (injection.oauthProvider && injection.target.case === "header" ? "Bearer " : "");
  return `${prefix}${value}`;
}

/** What a refusal calls an injection's source: `secret "github-token"` or `OAuth provider "github"`. */
export function sourceOf(injection: SecretInjection): string {
  return injection.secret
    ? `secret "${injection.secret}"`
    : `OAuth provider "${injection.oauthProvider}"`;
}
