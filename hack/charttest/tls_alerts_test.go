package charttest

import "testing"

// TestTLSCertificateAlerts runs promtool's rule unit tests for the certificate alerts: expiring
// follows the operator's CertificateExpiring condition (which knows the certificate's lifetime)
// and reports the time left; expired follows the expiry timestamp alone.
func TestTLSCertificateAlerts(t *testing.T) {
	// promtool's clock starts at 0: an expiry at 259200 is 3 days away, at 1800 half an hour.
	test := `evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'iocache_instance_tls_certificate_expiry_timestamp_seconds{namespace="shop",instance="sessions"}'
        values: '259200x120'
      - series: 'iocache_instance_condition{namespace="shop",instance="sessions",condition="CertificateExpiring",status="True"}'
        values: '1x120'
      - series: 'iocache_instance_tls_certificate_expiry_timestamp_seconds{namespace="shop",instance="fresh"}'
        values: '7776000x120'
      - series: 'iocache_instance_condition{namespace="shop",instance="fresh",condition="CertificateExpiring",status="True"}'
        values: '0x120'
      - series: 'iocache_instance_tls_certificate_expiry_timestamp_seconds{namespace="shop",instance="old"}'
        values: '1800x120'
    alert_rule_test:
      - eval_time: 10m
        alertname: IOCacheTLSCertificateExpiring
        exp_alerts: []
      - eval_time: 1h
        alertname: IOCacheTLSCertificateExpiring
        exp_alerts:
          - exp_labels: {severity: warning, namespace: shop, instance: sessions}
            exp_annotations:
              summary: the TLS certificate of iocache shop/sessions expires in 2d 23h 0m 0s
              description: Less than 7 days, or a quarter of its lifetime, is left and the certificate has not been renewed (cert-manager renews at a third by default); when it expires, clients that check it refuse the server.
              runbook_url: https://github.com/iocache/iocache/blob/main/docs/runbooks.md#iocachetlscertificateexpiring
      - eval_time: 20m
        alertname: IOCacheTLSCertificateExpired
        exp_alerts: []
      - eval_time: 1h
        alertname: IOCacheTLSCertificateExpired
        exp_alerts:
          - exp_labels: {severity: critical, namespace: shop, instance: old}
            exp_annotations:
              summary: the TLS certificate of iocache shop/old has expired
              description: The certificate in the instance's TLS Secret is past its notAfter; clients, replicas, probes and the operator refuse the server's handshake.
              runbook_url: https://github.com/iocache/iocache/blob/main/docs/runbooks.md#iocachetlscertificateexpiring
`
	promtoolTestRules(t, test)
}
