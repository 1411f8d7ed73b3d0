// Command pause is the pod sandbox ("infra") container of the local cluster: containerd starts it
// first in every pod to hold the pod's namespaces. It does what registry.k8s.io/pause does — wait
// for SIGINT or SIGTERM and reap any zombie children, as PID 1 must — and nothing else, so the
// local cluster needs no registry. Built static (CGO_ENABLED=0) by hack/local-cluster.sh.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s == syscall.SIGCHLD {
			for {
				var ws syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}
