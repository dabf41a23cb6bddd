import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readBlocks } from "./blocks.js";
import { runPage } from "./run-page.js";

// The docs check itself, on pages written here: what it must find wrong in a page, and what it
// must let through. test/docs-examples.test.ts runs it on the real pages against a stack.
describe("the docs check", () => {
  let dir: string;
  let n = 0;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "toolmesh-docs-check-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const check = async (markdown: string, env: Record<string, string> = {}) => {
    const workDir = await mkdtemp(path.join(dir, `page-${++n}-`));
    const run = await runPage({
      page: "page.md",
      blocks: readBlocks("page.md", markdown),
      workDir,
      env: { PATH: process.env.PATH ?? "", DOCS_CHECK_BIN: path.join(dir, "no-bin"), ...env },
      localise: (line) => line.replaceAll("127.0.0.1:7100", "127.0.0.1:4711"),
      timeoutMs: 10_000,
    });
    return { ...run, workDir };
  };
  const fence = "```";

  it("names a command that fails in the middle of a block, though the block ends well", async () => {
    const run = await check(`# Page\n\n${fence}sh\necho one\nfalse\necho two\n${fence}\n`);
    expect(run.problems).toHaveLength(1);
    expect(run.problems[0]).toMatch(/^page\.md:5: `false` exited with 1/);
  });

  it("names shown output that the command does not print, by its status words and codes", async () => {
    const md = `${fence}sh\necho '{"status":"NOT_SERVING"}'\n# → {"status":"SERVING"}\necho '{"code":"ok"}'\n# → {"code":"not_found","message":"…"}\n${fence}\n`;
    const run = await check(md);
    expect(run.problems).toHaveLength(2);
    expect(run.problems[0]).toMatch(/^page\.md:3: the output lacks SERVING/);
    expect(run.problems[1]).toMatch(/^page\.md:5: the output lacks "code":"not_found"/);
  });

  it("lets through the failure and output a page shows, ids and figures aside", async () => {
    const md = [
      `${fence}sh`,
      `echo '{"callId":"tm-1234","status":"CALL_STATUS_SUCCESS","durationMs":9}'`,
      `# → {"callId":"tm-01a2…","status":"CALL_STATUS_SUCCESS","durationMs":6}`,
      `sh -c 'echo "error: INVALID_ARGUMENT: bad"; exit 1'`,
      "# → error: INVALID_ARGUMENT: bad",
      "#   (exit code 1)",
      `${fence}`,
      "",
      `${fence}console`,
      "$ echo SERVING",
      "SERVING",
      `${fence}`,
    ].join("\n");
    expect((await check(md)).problems).toEqual([]);
  });

  it("runs a page's blocks in one shell, in order, with files, values and addresses it is given", async () => {
    const md = [
      `${fence}python file=tool.py`,
      "print('from a file block')",
      `${fence}`,
      "",
      `${fence}sh`,
      "GREETING=hello",
      "KEY=…   # the reader's own key",
      `${fence}`,
      "",
      `${fence}bash`,
      `echo "$GREETING $KEY http://127.0.0.1:7100" > out.txt; cat tool.py >> out.txt`,
      `${fence}`,
    ].join("\n");
    const run = await check(md, { KEY: "k-1" });
    expect(run.problems).toEqual([]);
    expect(await readFile(path.join(run.workDir, "out.txt"), "utf8")).toBe(
      "hello k-1 http://127.0.0.1:4711\nprint('from a file block')\n",
    );
    expect((await check(md)).problems).toEqual([
      "page.md: KEY=… is a value the docs check does not supply",
    ]);
  });

  it("runs no block marked not run, and wants the reason", async () => {
    const marked = `<!-- not run: needs Docker -->\n\n${fence}sh\nexit 1\n${fence}\n`;
    expect(readBlocks("page.md", marked)[0]?.notRun).toBe("needs Docker");
    expect(await check(marked)).toMatchObject({ problems: [], steps: 0 });
    expect(() => readBlocks("page.md", `<!-- not run -->\n${fence}sh\nexit 1\n${fence}\n`)).toThrow(
      /page\.md:1: say why the block is not run/,
    );
    expect(() => readBlocks("page.md", `${fence}sh\nexit 1\n`)).toThrow(/never closed/);
  });

  it("stops a page that runs too long, and what it left in the background", async () => {
    const run = await runPage({
      page: "slow.md",
      blocks: readBlocks("slow.md", `${fence}sh\nsleep 30 &\nsleep 30\n${fence}\n`),
      workDir: await mkdtemp(path.join(dir, "slow-")),
      env: { PATH: process.env.PATH ?? "" },
      localise: (line) => line,
      timeoutMs: 500,
    });
    expect(run.problems[0]).toBe("slow.md: still running after 500 ms");
    expect(run.ms).toBeLessThan(5000);
  });
});
