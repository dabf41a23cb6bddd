import type { Task } from "@toolmesh/proto";
import { ToolError } from "@toolmesh/sdk";

/** A task the CodingAgent is building, as its tools see it. */
export interface Build {
  task: Task;
  /** The tool register_tool registered, once it has. */
  registered?: string;
}

/**
 * The tasks being built in this process, by trace id: every call of a build runs under its
 * task's trace id, so a coding tool finds its task (and its sandbox) from the call alone, and a
 * call with any other trace id — one that did not come from a build — touches nothing.
 */
export class Builds {
  private readonly byTrace = new Map<string, Build>();

  open(task: Task): Build {
    const build: Build = { task };
    this.byTrace.set(task.traceId, build);
    return build;
  }

  close(task: Task): void {
    this.byTrace.delete(task.traceId);
  }

  /** The build a call belongs to; a ToolError for a call outside any running build. */
  of(traceId: string): Build {
    const build = this.byTrace.get(traceId);
    if (!build)
      throw new ToolError(
        "no_build",
        "this call belongs to no running build: the coding tools serve the CodingAgent's tasks only, under each task's trace id",
      );
    return build;
  }

  /** True while a task is being built here. */
  has(taskId: string): boolean {
    for (const build of this.byTrace.values()) if (build.task.id === taskId) return true;
    return false;
  }
}
