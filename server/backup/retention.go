package backup

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
)

// List is the complete backups under the store's prefix (those with a manifest), oldest first.
func (s *Store) List(ctx context.Context) ([]*Manifest, error) {
	prefix := s.loc.Prefix
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	var out []*Manifest
	for obj := range s.client.ListObjects(ctx, s.loc.Bucket, minio.ListObjectsOptions{Prefix: prefix}) {
		if obj.Err != nil {
			return nil, storageError("listing "+prefix, obj.Err)
		}
		name, ok := strings.CutSuffix(strings.TrimPrefix(obj.Key, prefix), manifestSuffix)
		if !ok || strings.Contains(name, "/") {
			continue
		}
		m, err := s.Manifest(ctx, name)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *Manifest) int { return a.Completed.Compare(b.Completed) })
	return out, nil
}

// Retention is how many complete backups to keep, and for how long; zero means no limit.
// The newest complete backup is always kept.
type Retention struct {
	Keep   int
	MaxAge time.Duration
}

// Expired is what r deletes from backups (oldest first, as List returns them) at now.
func (r Retention) Expired(backups []*Manifest, now time.Time) []*Manifest {
	var out []*Manifest
	for i, m := range backups {
		newer := len(backups) - 1 - i // complete backups newer than m
		if newer == 0 {
			break // the newest complete backup stays, whatever its age
		}
		if (r.Keep > 0 && newer >= r.Keep) || (r.MaxAge > 0 && now.Sub(m.Completed) > r.MaxAge) {
			out = append(out, m)
		}
	}
	return out
}

// Delete removes a backup: its manifest first (it stops looking complete), then its data.
func (s *Store) Delete(ctx context.Context, m *Manifest) error {
	if err := s.client.RemoveObject(ctx, s.loc.Bucket, s.key(m.Name, manifestSuffix), minio.RemoveObjectOptions{}); err != nil {
		return storageError("deleting the manifest of "+m.Name, err)
	}
	if err := s.client.RemoveObject(ctx, s.loc.Bucket, m.Object, minio.RemoveObjectOptions{}); err != nil {
		return storageError("deleting "+m.Object, err)
	}
	return nil
}

// Prune applies r after a successful backup: it deletes what r expires and returns it.
func (s *Store) Prune(ctx context.Context, r Retention, now time.Time) ([]*Manifest, error) {
	all, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	var deleted []*Manifest
	for _, m := range r.Expired(all, now) {
		if err := s.Delete(ctx, m); err != nil {
			return deleted, err
		}
		deleted = append(deleted, m)
	}
	return deleted, nil
}
