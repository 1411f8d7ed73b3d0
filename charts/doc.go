// Package charts holds no Go code of its own: its tests check the Helm chart in charts/iocache
// (rendering, the API server's verdict on what it renders) and the dashboards and alerting rules
// shipped with it (PromQL that parses and names only metrics that are really exported).
package charts
