export { type Isolation, isolatedHostConfig, NOBODY } from "./isolation.js";
