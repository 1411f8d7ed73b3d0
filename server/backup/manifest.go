package backup

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/minio/minio-go/v7"
)

// Format names this layout in every manifest; a restore refuses another.
const Format = "iocache-backup/v1"

// Manifest describes one complete backup. It is written next to the data object, last, and is
// what a restore verifies against; a backup's status in Kubernetes carries the same fields.
type Manifest struct {
	Format string `json:"format"`
	Name   string `json:"name"`
	// Object is the data object's key; Compression how it is compressed ("zstd").
	Object      string `json:"object"`
	Compression string `json:"compression"`
	// SHA256 and Size are of the object as stored; RDBSize is the snapshot's size.
	SHA256     string `json:"sha256"`
	Size       int64  `json:"size"`
	RDBSize    int64  `json:"rdbSize"`
	RDBVersion int    `json:"rdbVersion"`
	Keys       int64  `json:"keys"`
	// Server is "iocache" or "redis", ServerVersion its version.
	Server        string `json:"server"`
	ServerVersion string `json:"serverVersion"`
	// ReplID and ReplOffset name the point of the snapshot in the primary's history.
	ReplID     string    `json:"replID"`
	ReplOffset int64     `json:"replOffset"`
	Started    time.Time `json:"started"`
	Completed  time.Time `json:"completed"`
	// Labels are the caller's (the instance, its namespace, its config hash).
	Labels map[string]string `json:"labels,omitempty"`
}

// maxManifest bounds what a restore reads as a manifest.
const maxManifest = 1 << 20

func (s *Store) putManifest(ctx context.Context, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	_, err = s.client.PutObject(ctx, s.loc.Bucket, s.key(m.Name, manifestSuffix), bytes.NewReader(b), int64(len(b)),
		minio.PutObjectOptions{ContentType: "application/json", ServerSideEncryption: s.sse})
	if err != nil {
		return storageError("writing the manifest", err)
	}
	return nil
}

// Manifest reads the manifest of backup name: its presence is what makes a backup complete.
func (s *Store) Manifest(ctx context.Context, name string) (*Manifest, error) {
	obj, err := s.client.GetObject(ctx, s.loc.Bucket, s.key(name, manifestSuffix), minio.GetObjectOptions{})
	if err != nil {
		return nil, storageError("reading the manifest of "+name, err)
	}
	defer func() { _ = obj.Close() }()
	b, err := io.ReadAll(io.LimitReader(obj, maxManifest))
	if err != nil {
		return nil, storageError("reading the manifest of "+name, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("the manifest of %s: %w", name, err)
	}
	if m.Format != Format {
		return nil, fmt.Errorf("the manifest of %s is of format %q, not %q", name, m.Format, Format)
	}
	return &m, nil
}
