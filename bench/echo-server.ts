import * as grpc from "@grpc/grpc-js";

// The baseline: a raw @grpc/grpc-js unary echo, bytes in, same bytes out.
const server = new grpc.Server();
const passthrough = (value: Buffer) => value;
server.addService(
  {
    echo: {
      path: "/bench.Echo/Echo",
      requestStream: false,
      responseStream: false,
      requestSerialize: passthrough,
      requestDeserialize: passthrough,
      responseSerialize: passthrough,
      responseDeserialize: passthrough,
    },
  },
  {
    echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) =>
      callback(null, call.request),
  },
);
server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, port) => {
  if (error) throw error;
  process.stdout.write(`${JSON.stringify({ msg: "listening", port })}\n`);
});
