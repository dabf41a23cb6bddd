# Pinned versions of the code generators; sourced by setup.sh and generate.sh so that CI and
# every developer produce byte-identical generated code.
PROTOC_GEN_GO_VERSION=v1.36.11
PROTOC_GEN_GO_GRPC_VERSION=v1.6.1
GRPCIO_TOOLS_VERSION=1.76.0
# grpcurl: the reflection tests list and describe every service with it.
GRPCURL_VERSION=v1.9.4
TOOLMESH_BIN="$PWD/.toolmesh/bin"
TOOLMESH_VENV="$PWD/.venv"
