package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Results of a reconcile pass, as the reconciles counter labels them.
const (
	resultOK      = "ok"
	resultBlocked = "blocked" // the spec or its Secret keeps the operator from applying it
	resultError   = "error"   // an API call failed; retried with backoff
)

// reconcilesTotal counts reconcile passes per instance next to controller-runtime's per-controller
// figures, so one instance that keeps failing or stays blocked stands out.
var reconcilesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "iocache_cacheinstance_reconciles_total",
	Help: "Reconcile passes per CacheInstance, by result: ok, blocked (invalid spec or missing Secret) or error.",
}, []string{"namespace", "name", "result"})

func init() {
	metrics.Registry.MustRegister(reconcilesTotal)
}

func countReconcile(namespace, name, result string) {
	reconcilesTotal.WithLabelValues(namespace, name, result).Inc()
}

// forgetInstance drops a deleted instance's series, so deleted instances do not pile up.
func forgetInstance(namespace, name string) {
	reconcilesTotal.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "name": name})
}
