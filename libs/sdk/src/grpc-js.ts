import {
  type DescMessage,
  type DescService,
  fromBinary,
  type MessageShape,
  toBinary,
} from "@bufbuild/protobuf";
import type { ServiceDefinition } from "@grpc/grpc-js";

/**
 * A @grpc/grpc-js service definition for a protobuf-es service, so the hot path can use grpc-js
 * (several times faster than connect-node for small unary calls on two cores) with the same
 * generated messages every other part of toolmesh uses.
 */
export function grpcServiceDefinition(service: DescService): ServiceDefinition {
  const definition: Record<string, ServiceDefinition[string]> = {};
  for (const method of service.methods) {
    definition[method.localName] = {
      path: `/${service.typeName}/${method.name}`,
      requestStream:
        method.methodKind === "client_streaming" || method.methodKind === "bidi_streaming",
      responseStream:
        method.methodKind === "server_streaming" || method.methodKind === "bidi_streaming",
      requestSerialize: serializer(method.input),
      requestDeserialize: deserializer(method.input),
      responseSerialize: serializer(method.output),
      responseDeserialize: deserializer(method.output),
      originalName: method.localName,
    };
  }
  return definition as ServiceDefinition;
}

function serializer<Desc extends DescMessage>(schema: Desc) {
  return (value: MessageShape<Desc>): Buffer => {
    const bytes = toBinary(schema, value);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  };
}

function deserializer<Desc extends DescMessage>(schema: Desc) {
  return (bytes: Buffer): MessageShape<Desc> => fromBinary(schema, bytes);
}
