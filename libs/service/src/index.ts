export {
  type RpcOptions,
  type RunningService,
  runService,
  type ServiceContext,
  type ServiceSpec,
} from "./run-service.js";
