package charttest

import "testing"

// TestBackupMissedAlert runs promtool's rule unit tests for IOCacheBackupMissed: an hourly
// schedule whose last success is more than two runs old alerts; one that succeeds on time does
// not; a schedule that never succeeded alerts two runs after it began; an instance without a
// schedule (no interval series) never does.
func TestBackupMissedAlert(t *testing.T) {
	// promtool's clock starts at 0; samples every 10 minutes for 5 hours.
	test := `evaluation_interval: 1m
tests:
  - interval: 10m
    input_series:
      - series: 'iocache_backup_schedule_interval_seconds{namespace="shop",instance="stale"}'
        values: '3600x30'
      - series: 'iocache_backup_schedule_start_timestamp_seconds{namespace="shop",instance="stale"}'
        values: '0x30'
      - series: 'iocache_backup_last_success_timestamp_seconds{namespace="shop",instance="stale"}'
        values: '3600x30'
      - series: 'iocache_backup_schedule_interval_seconds{namespace="shop",instance="fresh"}'
        values: '3600x30'
      - series: 'iocache_backup_schedule_start_timestamp_seconds{namespace="shop",instance="fresh"}'
        values: '0x30'
      - series: 'iocache_backup_last_success_timestamp_seconds{namespace="shop",instance="fresh"}'
        values: '0+600x30'
      - series: 'iocache_backup_schedule_interval_seconds{namespace="shop",instance="never"}'
        values: '3600x30'
      - series: 'iocache_backup_schedule_start_timestamp_seconds{namespace="shop",instance="never"}'
        values: '3600x30'
      - series: 'iocache_backup_last_success_timestamp_seconds{namespace="shop",instance="manual"}'
        values: '0x30'
    alert_rule_test:
      - eval_time: 2h
        alertname: IOCacheBackupMissed
        exp_alerts: []
      - eval_time: 3h30m
        alertname: IOCacheBackupMissed
        exp_alerts:
          - exp_labels: {severity: warning, namespace: shop, instance: stale}
            exp_annotations:
              summary: iocache shop/stale has had no successful backup for 2h 30m 0s
              description: Two scheduled backups in a row did not complete (or none has since the schedule began). ` + "`kubectl get cachebackups`" + ` lists the failed ones; their Complete condition quotes the storage's or the server's error.
              runbook_url: https://github.com/iocache/iocache/blob/main/docs/runbooks.md#iocachebackupmissed
          - exp_labels: {severity: warning, namespace: shop, instance: never}
            exp_annotations:
              summary: iocache shop/never has had no successful backup for 2h 30m 0s
              description: Two scheduled backups in a row did not complete (or none has since the schedule began). ` + "`kubectl get cachebackups`" + ` lists the failed ones; their Complete condition quotes the storage's or the server's error.
              runbook_url: https://github.com/iocache/iocache/blob/main/docs/runbooks.md#iocachebackupmissed
`
	promtoolTestRules(t, test)
}
