// Package e2e is the end-to-end test of iocache on a real Kubernetes node: `make test-e2e` runs it
// (build tag e2e) against the local cluster of hack/local-cluster.sh, with the operator installed by
// its Helm chart as a user would. See e2e_test.go for what it checks and hack/test-e2e.sh for the
// set-up and the check that the machine is left as it was.
package e2e
