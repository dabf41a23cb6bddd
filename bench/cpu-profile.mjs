// Preload (NODE_OPTIONS=--import) that writes a CPU profile of the process when it exits.
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector";

const session = new Session();
session.connect();
session.post("Profiler.enable");
session.post("Profiler.start");
process.on("exit", () => {
  session.post("Profiler.stop", (error, result) => {
    if (!error)
      writeFileSync(
        `${process.env.BENCH_PROFILE_DIR}/dispatcher-${process.pid}.cpuprofile`,
        JSON.stringify(result.profile),
      );
  });
});
