# Pinned versions of the code generators; sourced by setup.sh and generate.sh so that CI and
# every developer produce byte-identical generated code.
PROTOC_GEN_GO_VERSION=v1.36.11
PROTOC_GEN_GO_GRPC_VERSION=v1.6.1
GRPCIO_TOOLS_VERSION=1.76.0
# grpcurl: the reflection tests list and describe every service with it.
GRPCURL_VERSION=v1.9.4
# The nats-server the launcher and the tests run (.toolmesh/bin/nats-server): 2.12 or newer, for
# jetstream.sync_interval and the fixes after Jepsen's analysis of 2.12.1 (docs/operations.md).
NATS_SERVER_VERSION=v2.15.2
# uv: the tool agent's CodingAgent builds Python tools with it (.venv/bin/uv in the tests).
UV_VERSION=0.13.9
TOOLMESH_BIN="$PWD/.toolmesh/bin"
TOOLMESH_VENV="$PWD/.venv"
