import { PassThrough } from "node:stream";
import { NOBODY } from "@toolmesh/docker";
import type Docker from "dockerode";

/** What a command printed and how it ended. */
export interface CommandResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  /** True when it ran past its time and was killed. */
  timedOut: boolean;
}

/** Output kept of a command, per stream. */
export const MAX_OUTPUT_BYTES = 64 * 1024;

/**
 * Runs argv in a running container as nobody, in /workspace, with `vars` in its environment:
 * killed past `limitMs` (by busybox's timeout inside the container, with a host timer as a
 * backstop), its output cut at MAX_OUTPUT_BYTES per stream.
 */
export async function execIn(
  docker: Docker,
  container: Docker.Container,
  argv: string[],
  vars: Record<string, string>,
  limitMs: number,
): Promise<CommandResult> {
  const seconds = Math.max(1, Math.ceil(limitMs / 1000));
  const exec = await container.exec({
    Cmd: ["/bin/timeout", "-s", "KILL", String(seconds), ...argv],
    AttachStdout: true,
    AttachStderr: true,
    User: NOBODY,
    WorkingDir: "/workspace",
    Env: Object.entries(vars).map(([k, v]) => `${k}=${v}`),
  });
  const stream = await exec.start({ hijack: true, stdin: false });
  const stdout = new Capped(MAX_OUTPUT_BYTES);
  const stderr = new Capped(MAX_OUTPUT_BYTES);
  const out = new PassThrough().on("data", (c: Buffer) => stdout.add(c));
  const err = new PassThrough().on("data", (c: Buffer) => stderr.add(c));
  docker.modem.demuxStream(stream, out, err);
  let backstop: NodeJS.Timeout | undefined;
  await new Promise<void>((resolve) => {
    stream.on("end", resolve);
    stream.on("close", resolve);
    stream.on("error", resolve);
    backstop = setTimeout(() => {
      stream.destroy();
      resolve();
    }, limitMs + 5000);
  });
  clearTimeout(backstop);
  const { ExitCode } = await exec.inspect();
  const exitCode = ExitCode ?? -1;
  return {
    exitCode,
    stdout: stdout.text(),
    stderr: stderr.text(),
    timedOut: exitCode === 137 || ExitCode === null,
  };
}

/** Collects output up to a limit, noting how much was dropped. */
class Capped {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private dropped = 0;
  constructor(private readonly limit: number) {}
  add(chunk: Buffer): void {
    const room = this.limit - this.kept;
    if (room <= 0) {
      this.dropped += chunk.length;
      return;
    }
    this.chunks.push(chunk.subarray(0, room));
    this.kept += Math.min(room, chunk.length);
    this.dropped += Math.max(0, chunk.length - room);
  }
  text(): string {
    const text = Buffer.concat(this.chunks).toString("utf8");
    return this.dropped > 0 ? `${text}\n… (${this.dropped} more bytes)` : text;
  }
}
