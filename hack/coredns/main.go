// Command coredns is CoreDNS with only the plugins the local cluster's DNS needs — bind, errors,
// health, ready, kubernetes, cache — so it builds from the Go module proxy in a fraction of the
// time of the full distribution (no cloud providers, no etcd client, no forwarders). It runs as a
// host process on the node address, answers for cluster.local from the API server, and forwards
// nothing: pods have no route to outside resolvers anyway. Built by hack/k8s-binaries.sh coredns.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() { coremain.Run() }
