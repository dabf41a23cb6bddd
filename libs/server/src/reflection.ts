import {
  clone,
  create,
  createFileRegistry,
  type DescFile,
  type DescMessage,
  type DescService,
  type MessageInitShape,
  toBinary,
} from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import { Code } from "@toolmesh/errors";
import {
  file_grpc_reflection_v1_reflection,
  ServerReflection,
  type ServerReflectionRequest,
  type ServerReflectionResponseSchema,
} from "@toolmesh/proto";

/** The reflection services; like health, they answer without a credential. */
export const REFLECTION_SERVICES = [
  "grpc.reflection.v1.ServerReflection",
  "grpc.reflection.v1alpha.ServerReflection",
];

/**
 * Serves grpc.reflection.v1 and v1alpha for `services` (and health and reflection themselves),
 * so `grpcurl list` and `grpcurl describe` work on every port. Answers come from the descriptors
 * protobuf-es generated, so they always match what the port serves.
 */
export function addReflection(router: ConnectRouter, services: DescService[]): void {
  const alpha = v1alpha();
  const index = new DescriptorIndex([...services, ServerReflection, alpha]);
  router.service(ServerReflection, reflectionHandler(index, ServerReflection));
  router.service(alpha as typeof ServerReflection, reflectionHandler(index, alpha));
}

/** Every file the services need (their imports included) and where each symbol is defined. */
class DescriptorIndex {
  readonly serviceNames: string[];
  private readonly files = new Map<string, DescFile>();
  private readonly symbols = new Map<string, DescFile>();
  private readonly encoded = new Map<string, Uint8Array>();

  constructor(services: DescService[]) {
    this.serviceNames = services.map((s) => s.typeName);
    for (const service of services) this.addFile(service.file);
  }

  private addFile(file: DescFile): void {
    if (this.files.has(file.name)) return;
    this.files.set(file.name, file);
    for (const dep of file.dependencies) this.addFile(dep);
    for (const service of file.services) {
      this.symbols.set(service.typeName, file);
      for (const method of service.methods)
        this.symbols.set(`${service.typeName}.${method.name}`, file);
    }
    for (const enumDesc of file.enums) this.symbols.set(enumDesc.typeName, file);
    for (const ext of file.extensions) this.symbols.set(ext.typeName, file);
    const addMessage = (message: DescMessage) => {
      this.symbols.set(message.typeName, file);
      for (const nested of message.nestedMessages) addMessage(nested);
      for (const nested of message.nestedEnums) this.symbols.set(nested.typeName, file);
    };
    for (const message of file.messages) addMessage(message);
  }

  fileByName(name: string): DescFile | undefined {
    return this.files.get(name);
  }

  fileOfSymbol(symbol: string): DescFile | undefined {
    return this.symbols.get(symbol.replace(/^\./, ""));
  }

  /** The serialized FileDescriptorProto of a file and of everything it imports, file first. */
  withImports(file: DescFile): Uint8Array[] {
    const seen = new Set<string>();
    const out: Uint8Array[] = [];
    const visit = (f: DescFile) => {
      if (seen.has(f.name)) return;
      seen.add(f.name);
      out.push(this.encode(f));
      for (const dep of f.dependencies) visit(dep);
    };
    visit(file);
    return out;
  }

  private encode(file: DescFile): Uint8Array {
    let bytes = this.encoded.get(file.name);
    if (!bytes) {
      bytes = toBinary(FileDescriptorProtoSchema, file.proto);
      this.encoded.set(file.name, bytes);
    }
    return bytes;
  }
}

type ResponseInit = MessageInitShape<typeof ServerReflectionResponseSchema>;

function reflectionHandler(
  index: DescriptorIndex,
  service: DescService,
): ServiceImpl<typeof ServerReflection> {
  const responseSchema = service.methods[0]?.output as typeof ServerReflectionResponseSchema;
  return {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) {
        yield create(responseSchema, {
          validHost: req.host,
          originalRequest: req,
          ...answer(index, req),
        });
      }
    },
  };
}

function answer(index: DescriptorIndex, req: ServerReflectionRequest): ResponseInit {
  const r = req.messageRequest;
  const notFound = (what: string): ResponseInit => ({
    messageResponse: {
      case: "errorResponse",
      value: { errorCode: Code.NotFound, errorMessage: `${what} not found` },
    },
  });
  const files = (file: DescFile | undefined, what: string): ResponseInit =>
    file
      ? {
          messageResponse: {
            case: "fileDescriptorResponse",
            value: { fileDescriptorProto: index.withImports(file) },
          },
        }
      : notFound(what);
  switch (r.case) {
    case "listServices":
      return {
        messageResponse: {
          case: "listServicesResponse",
          value: { service: index.serviceNames.map((name) => ({ name })) },
        },
      };
    case "fileByFilename":
      return files(index.fileByName(r.value), `file "${r.value}"`);
    case "fileContainingSymbol":
      return files(index.fileOfSymbol(r.value), `symbol "${r.value}"`);
    case "fileContainingExtension":
      return notFound(
        `extension ${r.value.extensionNumber} of "${r.value.containingType}" (toolmesh defines no extensions)`,
      );
    case "allExtensionNumbersOfType":
      return index.fileOfSymbol(r.value)
        ? {
            messageResponse: {
              case: "allExtensionNumbersResponse",
              value: { baseTypeName: r.value, extensionNumber: [] },
            },
          }
        : notFound(`type "${r.value}"`);
    default:
      return {
        messageResponse: {
          case: "errorResponse",
          value: {
            errorCode: Code.InvalidArgument,
            errorMessage:
              "empty request: set one of list_services, file_by_filename, file_containing_symbol",
          },
        },
      };
  }
}

let alphaService: DescService | undefined;

/** grpc.reflection.v1alpha: the v1 file under the older package name, built once at run time. */
function v1alpha(): DescService {
  if (alphaService) return alphaService;
  const proto = clone(FileDescriptorProtoSchema, file_grpc_reflection_v1_reflection.proto);
  const rename = (typeName: string) =>
    typeName.replace(/^\.grpc\.reflection\.v1\./, ".grpc.reflection.v1alpha.");
  proto.name = "grpc/reflection/v1alpha/reflection.proto";
  proto.package = "grpc.reflection.v1alpha";
  for (const message of proto.messageType)
    for (const field of message.field) field.typeName = rename(field.typeName);
  for (const svc of proto.service)
    for (const method of svc.method) {
      method.inputType = rename(method.inputType);
      method.outputType = rename(method.outputType);
    }
  const registry = createFileRegistry(proto, () => undefined);
  const found = registry.getService("grpc.reflection.v1alpha.ServerReflection");
  if (!found) throw new Error("grpc.reflection.v1alpha.ServerReflection did not build");
  alphaService = found;
  return found;
}
