import type * as grpc from "@grpc/grpc-js";

const bytes = (value: Buffer) => value;

/** A unary gRPC method that carries bytes as they are: the raw grpc-js floors of the benchmark. */
export function bytesMethod(path: string): grpc.MethodDefinition<Buffer, Buffer> {
  return {
    path,
    requestStream: false,
    responseStream: false,
    requestSerialize: bytes,
    requestDeserialize: bytes,
    responseSerialize: bytes,
    responseDeserialize: bytes,
  };
}
