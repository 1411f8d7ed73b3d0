// Package charttest checks the Helm chart in charts/iocache from outside it, so that charts/ holds
// only charts (`helm lint charts/*`): rendering, the API server's verdict on what it renders and on
// the kustomize installer, and the dashboards and alerting rules shipped with the chart (PromQL that
// parses, names only metrics that are really exported, and fires in a real Prometheus).
package charttest
