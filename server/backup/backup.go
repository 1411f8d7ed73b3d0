package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/minio/minio-go/v7"

	"github.com/iocache/iocache/server/rdb"
)

// DefaultPartSize is the multipart upload's part: the most a backup holds in memory at once
// besides the compressor's window, and a tenth of a 10,000-part upload's limit per GiB (so up
// to 156 GiB compressed).
const DefaultPartSize = 16 << 20

// Options tune a backup.
type Options struct {
	// Labels are recorded in the manifest (instance, namespace, config hash).
	Labels map[string]string
	// PartSize is the upload's part size; 0 means DefaultPartSize.
	PartSize uint64
	// Now is the clock (tests give a fake one).
	Now func() time.Time
}

// counter counts what passes to w, and hashes it when h is set; err is w's first error.
type counter struct {
	w   io.Writer
	h   hash.Hash
	n   int64
	err error
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil && c.err == nil {
		c.err = err
	}
	if c.h != nil {
		c.h.Write(p[:n])
	}
	c.n += int64(n)
	return n, err
}

// Run takes a snapshot of src and stores it as backup name: the data object, then its
// manifest. Nothing is written under the final names unless the whole snapshot was read, its
// RDB checksum matched, and the upload completed; a failed upload's parts are aborted.
func Run(ctx context.Context, src Source, store *Store, name string, opts Options) (*Manifest, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	partSize := opts.PartSize
	if partSize == 0 {
		partSize = DefaultPartSize
	}
	if done, err := store.exists(ctx, store.key(name, manifestSuffix)); err != nil {
		return nil, err
	} else if done {
		return nil, fmt.Errorf("backup %s already exists: names are never reused", name)
	}
	m := &Manifest{Format: Format, Name: name, Object: store.key(name, dataSuffix), Compression: "zstd",
		Labels: opts.Labels, Started: now().UTC()}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sn, err := src.open(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sn.Close() }()
	m.Server, m.ServerVersion, m.ReplID, m.ReplOffset = sn.serverName, sn.serverVersion, sn.replID, sn.replOffset

	pr, pw := io.Pipe()
	stored := &counter{w: pw, h: sha256.New()}
	produced := make(chan error, 1)
	go func() {
		err := m.encode(sn.payload, stored)
		pw.CloseWithError(err) // nil: the upload reads EOF and completes
		produced <- err
	}()
	_, upErr := store.client.PutObject(ctx, store.loc.Bucket, m.Object, pr, -1, minio.PutObjectOptions{
		ContentType:          "application/zstd",
		PartSize:             partSize,
		ServerSideEncryption: store.sse,
		UserMetadata:         map[string]string{"Iocache-Format": Format},
	})
	if upErr != nil {
		cancel() // the snapshot's reader stops the encoder
		pr.CloseWithError(upErr)
	}
	encErr := <-produced
	// The first failure is the one to report: the snapshot's (the upload then read its error),
	// or the storage's (the encoder then failed to write into the closed pipe).
	switch {
	case encErr != nil && stored.err == nil:
		return nil, fmt.Errorf("reading the snapshot: %w", encErr)
	case upErr != nil:
		return nil, storageError("uploading "+m.Object, upErr)
	case encErr != nil:
		return nil, fmt.Errorf("reading the snapshot: %w", encErr)
	}
	m.SHA256, m.Size = hex.EncodeToString(stored.h.Sum(nil)), stored.n
	m.Completed = now().UTC()
	if err := store.putManifest(ctx, m); err != nil {
		return nil, err
	}
	return m, nil
}

// encode reads the whole payload into dst through zstd, checking it as an RDB on the way: its
// keys are counted and its CRC64 must match, or the backup fails.
func (m *Manifest) encode(payload io.Reader, dst io.Writer) error {
	zw, err := zstd.NewWriter(dst, zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		return err
	}
	raw := &counter{w: zw}
	tee := io.TeeReader(payload, raw)
	st, err := rdb.Load(tee, rdb.Handler{
		Entry:    func(*rdb.Entry) error { return nil },
		Function: func([]byte) error { return nil },
	})
	if err != nil {
		_ = zw.Close()
		return fmt.Errorf("the snapshot is not a valid RDB: %w", err)
	}
	if _, err := io.Copy(io.Discard, tee); err != nil { // nothing should follow the checksum
		_ = zw.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	m.Keys, m.RDBVersion, m.RDBSize = st.Keys, st.Version, raw.n
	return nil
}
