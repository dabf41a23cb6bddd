export {
  type RpcOptions,
  type RunningService,
  runService,
  type ServiceContext,
  type ServiceSpec,
} from "./run-service.js";
export { loadSqlite } from "./sqlite.js";
