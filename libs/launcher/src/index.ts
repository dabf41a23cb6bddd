export { availableServices, type ServiceSpec, stackServices } from "./services.js";
export {
  type RunningEndpoint,
  type RunningStack,
  StackError,
  type StackOptions,
  startStack,
} from "./stack.js";
