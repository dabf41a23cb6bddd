import { parseArgs } from "node:util";
import { ConnectError, codeName } from "@toolmesh/errors";
import type { Command, Group, Leaf } from "./command.js";
import { tasks } from "./commands/agent.js";
import { batch, call, tail, trace } from "./commands/calls.js";
import { approvals, usage } from "./commands/governance.js";
import { audit, status } from "./commands/operate.js";
import { grants, keys } from "./commands/permission.js";
import { groups, tools } from "./commands/registry.js";
import { connections, secrets } from "./commands/vault.js";
import { CliContext, UsageError } from "./context.js";
import { Output } from "./output.js";

/** Every command, in the order `toolmesh --help` lists them. */
export const commands: Record<string, Command> = {
  tools,
  groups,
  grants,
  keys,
  secrets,
  connections,
  call,
  batch,
  trace,
  tail,
  approvals,
  usage,
  tasks,
  audit,
  status,
};

const GLOBAL = {
  json: { type: "boolean" },
  token: { type: "string" },
  config: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

const GLOBAL_HELP = [
  "Options for every command:",
  "  --json           print JSON for scripts instead of tables",
  "  --token TOKEN    the bearer credential (else TOOLMESH_TOKEN, the config file, .toolmesh/admin.token)",
  "  --config FILE    a YAML file with token: and service URLs (else TOOLMESH_CONFIG, ~/.config/toolmesh/config.yaml)",
  "  -h, --help       help for any command",
  "Service addresses: TOOLMESH_<SERVICE>_URL, or TOOLMESH_HOST with TOOLMESH_<SERVICE>_PORT (defaults 127.0.0.1:7100-7104, the tool agent 7106).",
  "Exit codes: 0 done, 1 the request failed (or a call did not succeed), 2 a usage mistake.",
];

function isGroup(command: Command): command is Group {
  return "sub" in command;
}

function mainHelp(out: Output): void {
  out.line("toolmesh — operate a toolmesh stack from the terminal\n");
  out.line("Usage: toolmesh <command> [subcommand] [options]\n");
  out.line("Commands:");
  for (const [name, command] of Object.entries(commands)) {
    const subs = isGroup(command) ? ` ${Object.keys(command.sub).join("|")}` : "";
    out.line(`  ${`${name}${subs}`.padEnd(34)} ${command.summary}`);
  }
  out.line();
  for (const line of GLOBAL_HELP) out.line(line);
}

function leafHelp(out: Output, leaf: Leaf): void {
  out.line(`Usage: toolmesh ${leaf.usage}\n`);
  out.line(leaf.summary);
  if (leaf.details) {
    out.line();
    for (const line of leaf.details) out.line(line);
  }
  out.line();
  for (const line of GLOBAL_HELP) out.line(line);
}

function groupHelp(out: Output, name: string, group: Group): void {
  out.line(`Usage: toolmesh ${name} <${Object.keys(group.sub).join("|")}> [options]\n`);
  for (const [sub, leaf] of Object.entries(group.sub))
    out.line(`  ${sub.padEnd(8)} ${leaf.summary}`);
  out.line(`\nSee toolmesh ${name} <subcommand> --help.`);
}

/** Runs the CLI with `argv` (without node and the script) and resolves with the exit code. */
export async function main(
  argv: string[],
  io: { stdout: NodeJS.WriteStream; stderr: NodeJS.WriteStream; env: NodeJS.ProcessEnv } = {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
  },
): Promise<number> {
  const json = argv.includes("--json");
  const out = new Output(io.stdout, io.stderr, { json, env: io.env });
  const [name, ...rest] = argv.filter(
    (a, i) => i > 0 || !a.startsWith("-") || a === "--help" || a === "-h",
  );
  try {
    if (!name || name === "help" || name === "--help" || name === "-h") {
      mainHelp(out);
      return name ? 0 : 2;
    }
    const command = commands[name];
    if (!command) throw new UsageError(`unknown command "${name}"; toolmesh --help lists them`);
    let leaf: Leaf;
    let args = argv.slice(argv.indexOf(name) + 1);
    if (isGroup(command)) {
      const subName = rest[0];
      if (!subName || subName === "--help" || subName === "-h") {
        groupHelp(out, name, command);
        return subName ? 0 : 2;
      }
      const sub = command.sub[subName];
      if (!sub)
        throw new UsageError(
          `unknown subcommand "${name} ${subName}"; use one of ${Object.keys(command.sub).join(", ")}`,
        );
      leaf = sub;
      args = args.slice(args.indexOf(subName) + 1);
    } else leaf = command;

    let parsed: ReturnType<typeof parseArgs>;
    try {
      parsed = parseArgs({
        args,
        options: { ...GLOBAL, ...(leaf.options ?? {}) },
        allowPositionals: true,
        strict: true,
      });
    } catch (error) {
      throw new UsageError(
        `${(error as Error).message}; see toolmesh ${leaf.usage.split(" [")[0]} --help`,
      );
    }
    const { values, positionals } = parsed;
    if (values.help) {
      leafHelp(out, leaf);
      return 0;
    }
    const [min, max] = leaf.args ?? [0, 0];
    if (positionals.length < min || positionals.length > max)
      throw new UsageError(`usage: toolmesh ${leaf.usage}`);
    const ctx = new CliContext(out, {
      token: typeof values.token === "string" ? values.token : undefined,
      config: typeof values.config === "string" ? values.config : undefined,
      env: io.env,
    });
    return await leaf.run(ctx, positionals, values);
  } catch (error) {
    if (error instanceof UsageError) {
      out.error(error.message);
      return 2;
    }
    if (error instanceof ConnectError) {
      out.error(`${codeName(error.code)}: ${error.rawMessage}`);
      return 1;
    }
    out.error((error as Error).message ?? String(error));
    return 1;
  }
}
