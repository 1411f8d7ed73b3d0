package charttest

import "testing"

// TestRolloutWaitingAlert runs promtool's rule unit test for IOCacheRolloutWaiting: it fires once
// the operator's Rollout condition has been False for 15 minutes (a change waiting for room or
// consent), and not for an instance whose rollout goes on.
func TestRolloutWaitingAlert(t *testing.T) {
	test := `evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'iocache_instance_condition{namespace="shop",instance="sessions",condition="Rollout",status="False"}'
        values: '1x60'
      - series: 'iocache_instance_condition{namespace="shop",instance="carts",condition="Rollout",status="False"}'
        values: '0x60'
    alert_rule_test:
      - eval_time: 10m
        alertname: IOCacheRolloutWaiting
        exp_alerts: []
      - eval_time: 20m
        alertname: IOCacheRolloutWaiting
        exp_alerts:
          - exp_labels: {severity: warning, namespace: shop, instance: sessions, condition: Rollout, status: "False"}
            exp_annotations:
              summary: iocache shop/sessions has a change waiting for room or consent
              description: The Rollout condition has been False for 15 minutes (WaitingForRoom or WaitingForConsent); a change that needs a new pod is not applied, and the pod keeps serving with its data.
              runbook_url: https://github.com/iocache/iocache/blob/main/docs/runbooks.md#iocacherolloutwaiting
`
	promtoolTestRules(t, test)
}
