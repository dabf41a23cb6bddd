import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { create, toBinary } from "@bufbuild/protobuf";
import { type ChainHead, chainedAfter, SegmentWriter } from "@toolmesh/archive";
import { AuditLogBlockSchema, type AuditRecord, AuditRecordSchema } from "@toolmesh/proto";
import { BLOCK_TYPE } from "@toolmesh/records";
import { repoRoot } from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const execFileAsync = promisify(execFile);
const bin = path.join(repoRoot, "libs/cli/bin/toolmesh.mjs");

/** Runs `toolmesh audit verify --archive <dir>` with no stack, no token, no service address. */
async function verify(dir: string, ...extra: string[]) {
  try {
    const { stdout, stderr } = await execFileAsync(
      process.execPath,
      [bin, "audit", "verify", "--archive", dir, ...extra],
      { env: { PATH: process.env.PATH, NO_COLOR: "1" }, timeout: 60_000 },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Seals segments of `blocks` blocks of 3 chained records each into `dir`; returns their files. */
async function writeArchive(dir: string, segments: number, blocks: number): Promise<string[]> {
  let head: ChainHead = { sequence: 0n, hash: "" };
  let seq = 1;
  const files: string[] = [];
  for (let s = 0; s < segments; s++) {
    const writer = await SegmentWriter.open(dir, {
      stream: "TOOLMESH_AUDIT_LOG",
      streamCreated: "2026-01-01T00:00:00Z",
      frameBytes: 2048,
    });
    for (let b = 0; b < blocks; b++, seq++) {
      const records: AuditRecord[] = [];
      for (let r = 0; r < 3; r++) {
        const i = Number(head.sequence);
        const record = chainedAfter(
          create(AuditRecordSchema, { id: `r${i}`, tool: "t.run", agentId: `a${i % 3}` }),
          head,
        );
        head = { sequence: record.sequence, hash: record.hash };
        records.push(record);
      }
      await writer.add({
        seq,
        timeNanos: BigInt(Date.now()) * 1_000_000n,
        subject: "toolmesh.auditlog.block",
        type: BLOCK_TYPE,
        msgId: `b${seq}`,
        headerBytes: 100,
        data: toBinary(AuditLogBlockSchema, create(AuditLogBlockSchema, { records })),
      });
    }
    files.push((await writer.seal()).file);
  }
  return files;
}

describe("toolmesh audit verify --archive", () => {
  let dir: string;
  let files: string[];
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "toolmesh-cli-archive-"));
    files = await writeArchive(dir, 4, 20);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("verifies every segment offline and exits 0", async () => {
    const run = await verify(dir);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("intact: 240 records checked in 4 segments, records 1–240");
    const json = await verify(dir, "--json");
    expect(JSON.parse(json.stdout)).toMatchObject({
      ok: true,
      recordsChecked: 240,
      firstSequence: "1",
      lastSequence: "240",
    });
  });

  it("names a segment with a flipped byte and a missing one, and exits 1", async () => {
    const flipped = files[1] as string;
    const bytes = await readFile(flipped);
    bytes[Math.floor(bytes.length / 2)] = (bytes[Math.floor(bytes.length / 2)] as number) ^ 0x01;
    await writeFile(flipped, bytes);
    await rm(files[2] as string);
    const run = await verify(dir);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(
      new RegExp(`${path.basename(flipped)}.*checksum does not match: the file was changed`),
    );
    expect(run.stdout).toContain(
      `missing: stream sequences 41–60, between ${path.basename(flipped)} and ${path.basename(files[3] as string)}`,
    );
    // The first broken record is the first of the damaged frame: 3 records a block.
    const broken = new RegExp(
      `broken at record (\\d+) in ${path.basename(flipped)}: frame \\d+ \\(blocks (\\d+)–\\d+\\) is damaged`,
    ).exec(run.stdout);
    expect(broken, run.stdout).not.toBeNull();
    expect(Number(broken?.[1])).toBe((Number(broken?.[2]) - 1) * 3 + 1);
  });

  it("refuses a directory that does not exist, and --from with --archive", async () => {
    const missing = await verify(path.join(dir, "nope"));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("no such directory");
    const both = await verify(dir, "--from", "3");
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("--from and --archive do not go together");
  });
});
