import * as grpc from "@grpc/grpc-js";
import { bytesMethod } from "./bytes-method.js";

// The floor a gateway is measured against: a raw @grpc/grpc-js pass-through proxy. An agent's
// unary call (a serialized InvokeRequest) is forwarded as it is to the backend's Invoke on one
// HTTP/2 connection, and the backend's last message goes back — one hop more than the echo, and
// none of the chain's work (no auth, policy, validation or records).
const backend = process.env.BENCH_BACKEND_ADDRESS;
if (!backend) throw new Error("BENCH_BACKEND_ADDRESS names the backend to forward to");
const bytes = (value: Buffer) => value;
const upstream = new grpc.Client(backend, grpc.credentials.createInsecure());
const server = new grpc.Server();
server.addService(
  { invoke: bytesMethod("/bench.Proxy/Invoke") },
  {
    invoke: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      let last: Buffer | undefined;
      const forwarded = upstream.makeServerStreamRequest(
        "/toolmesh.backend.v1.ToolBackendService/Invoke",
        bytes,
        bytes,
        call.request,
        new grpc.Metadata(),
        {},
      );
      forwarded.on("data", (message: Buffer) => {
        last = message;
      });
      forwarded.on("error", (error) => callback(error));
      forwarded.on("end", () => callback(null, last ?? Buffer.alloc(0)));
    },
  },
);
server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, port) => {
  if (error) throw error;
  process.stdout.write(`${JSON.stringify({ msg: "listening", port })}\n`);
});
