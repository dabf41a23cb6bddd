package toolmesh

import (
	"fmt"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
)

// resolvers numbers the resolver each balanced connection gets, so two clients never share one.
var resolvers atomic.Uint64

// roundRobin is gRPC's own policy: each RPC goes to the next READY connection, and one that is
// down is skipped (and reconnected in the background) until it is back.
const roundRobin = `{"loadBalancingConfig":[{"round_robin":{}}]}`

// splitAddresses reads "host:port" or "host1:port1,host2:port2" (spaces allowed).
func splitAddresses(address string) []string {
	var out []string
	for _, a := range strings.Split(address, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// dialTarget is the target and dial options for one address or a comma-separated list of
// replicas (several Dispatchers behind no load balancer): a list gets a resolver of its own that
// names every address, and round robin over them.
func dialTarget(address string) (string, []grpc.DialOption) {
	parts := splitAddresses(address)
	if len(parts) < 2 {
		return address, nil
	}
	r := manual.NewBuilderWithScheme(fmt.Sprintf("toolmesh-replicas-%d", resolvers.Add(1)))
	addrs := make([]resolver.Address, len(parts))
	for i, p := range parts {
		addrs[i] = resolver.Address{Addr: p}
	}
	r.InitialState(resolver.State{Addresses: addrs})
	return r.Scheme() + ":///replicas", []grpc.DialOption{
		grpc.WithResolvers(r),
		grpc.WithDefaultServiceConfig(roundRobin),
	}
}
