// The benches' /proc readings are the launcher's, under their short names.
export { processCpuMs as cpuMs, processRssMb as rssMb } from "@toolmesh/testkit";
