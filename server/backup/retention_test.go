package backup_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/iocache/iocache/server/backup"
	"github.com/iocache/iocache/server/testpeer"
)

// Retention across 20 scheduled runs an hour apart (a fake clock), against real storage: by
// count, by age, both; a failed run deletes nothing; the newest complete backup survives any age.
func TestRetentionAcrossScheduledRuns(t *testing.T) {
	s3 := testpeer.StartS3(t, "../../bin")
	source := startServer(t, "iocache", "")
	fill(t, source.C, 100)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		policy backup.Retention
		want   []string // the backups left after 20 runs, oldest first
	}{
		{"keep 5", backup.Retention{Keep: 5}, names(16, 20)},
		{"max age 6h", backup.Retention{MaxAge: 6 * time.Hour}, names(14, 20)},
		{"keep 3 and max age 6h", backup.Retention{Keep: 3, MaxAge: 6 * time.Hour}, names(18, 20)},
		{"none", backup.Retention{}, names(1, 20)},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := openStore(t, s3, c.name)
			for run := 1; run <= 20; run++ {
				now := t0.Add(time.Duration(run) * time.Hour)
				if _, err := backup.Run(ctx, backup.Source{Addr: source.Addr}, store, fmt.Sprintf("run-%02d", run),
					backup.Options{Now: func() time.Time { return now }}); err != nil {
					t.Fatal(err)
				}
				if _, err := store.Prune(ctx, c.policy, now); err != nil {
					t.Fatal(err)
				}
			}
			if got := listNames(t, store); !slices.Equal(got, c.want) {
				t.Fatalf("left %v, want %v", got, c.want)
			}
			// Long after the last run, an age limit still keeps the newest complete backup.
			if _, err := store.Prune(ctx, backup.Retention{MaxAge: time.Hour}, t0.Add(1000*time.Hour)); err != nil {
				t.Fatal(err)
			}
			if got := listNames(t, store); !slices.Equal(got, names(20, 20)) {
				t.Fatalf("an age limit long after the last run left %v", got)
			}
		})
	}
	// A backup that fails (the source is gone) leaves the others as they were: retention runs
	// only after a success.
	store := openStore(t, s3, "keep 5")
	if _, err := backup.Run(ctx, backup.Source{Addr: "127.0.0.1:1", Timeout: time.Second}, store, "run-21", backup.Options{}); err == nil {
		t.Fatal("a backup of nothing succeeded")
	}
	if got := listNames(t, store); !slices.Equal(got, names(20, 20)) {
		t.Fatalf("after a failed run: %v", got)
	}
}

func names(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("run-%02d", i))
	}
	return out
}

func listNames(t *testing.T, store *backup.Store) []string {
	t.Helper()
	list, err := store.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range list {
		out = append(out, m.Name)
	}
	return out
}
