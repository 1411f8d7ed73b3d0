package controllers

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// instanceCondition mirrors each instance's conditions, one series per possible status, so an alert
// can say "ThroughputValidated is False" as iocache_instance_condition{...,status="False"} == 1.
var instanceCondition = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "iocache_instance_condition",
	Help: "1 for the current status of each condition of each CacheInstance, 0 for the other statuses.",
}, []string{"namespace", "instance", "condition", "status"})

// primaryChanges counts the operator's changes of primary, by reason (PrimaryUnavailable,
// PrimaryRestarted, Switchover), so an alert can say a failover happened and a dashboard how often.
var primaryChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "iocache_instance_primary_changes_total",
	Help: "Changes of primary the operator made per replicated CacheInstance, by reason: PrimaryUnavailable, PrimaryRestarted or Switchover.",
}, []string{"namespace", "instance", "reason"})

// tlsCertificateExpiry is when the certificate of each instance with spec.tls expires, read from
// its Secret's tls.crt, so an alert can fire before it does whatever renews it.
var tlsCertificateExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "iocache_instance_tls_certificate_expiry_timestamp_seconds",
	Help: "When the TLS certificate of a CacheInstance with spec.tls expires (notAfter), in seconds since the epoch.",
}, []string{"namespace", "instance"})

func init() {
	metrics.Registry.MustRegister(reconcilesTotal, instanceCondition, primaryChanges, tlsCertificateExpiry)
}

func setTLSExpiry(namespace, name string, notAfter time.Time) {
	tlsCertificateExpiry.WithLabelValues(namespace, name).Set(float64(notAfter.Unix()))
}

// forgetTLSExpiry drops the series of an instance without spec.tls.
func forgetTLSExpiry(namespace, name string) {
	tlsCertificateExpiry.DeleteLabelValues(namespace, name)
}

func countReconcile(namespace, name, result string) {
	reconcilesTotal.WithLabelValues(namespace, name, result).Inc()
}

// exportConditions sets the condition gauge from an instance's stored conditions.
func exportConditions(namespace, name string, conditions []metav1.Condition) {
	for _, c := range conditions {
		for _, s := range []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown} {
			v := 0.0
			if c.Status == s {
				v = 1
			}
			instanceCondition.WithLabelValues(namespace, name, c.Type, string(s)).Set(v)
		}
	}
}

// forgetInstance drops a deleted instance's series, and what the operator keeps of it in memory, so
// deleted instances do not pile up.
func forgetInstance(namespace, name string) {
	lastSaveRead.Delete(namespace + "/" + name)
	forgetBackupMetrics(namespace, name)
	reconcilesTotal.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "name": name})
	for _, v := range []*prometheus.MetricVec{instanceCondition.MetricVec, primaryChanges.MetricVec, benchmarkOpsPerSecond.MetricVec,
		benchmarkLatency.MetricVec, benchmarkRuns.MetricVec, tlsCertificateExpiry.MetricVec} {
		v.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "instance": name})
	}
}
