import * as grpc from "@grpc/grpc-js";
import { bytesMethod } from "./bytes-method.js";

// The baseline: a raw @grpc/grpc-js unary echo, bytes in, same bytes out.
const server = new grpc.Server();
server.addService(
  { echo: bytesMethod("/bench.Echo/Echo") },
  {
    echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) =>
      callback(null, call.request),
  },
);
server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, port) => {
  if (error) throw error;
  process.stdout.write(`${JSON.stringify({ msg: "listening", port })}\n`);
});
