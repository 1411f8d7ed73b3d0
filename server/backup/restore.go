package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"
	"github.com/minio/minio-go/v7"

	"github.com/iocache/iocache/server/rdb"
)

// ErrMismatch is a restore whose object does not match its manifest: it is never put in place.
var ErrMismatch = errors.New("the backup does not match its manifest")

// Restore writes backup name to dst (the server's dir/dbfilename): the object is streamed
// through its checksum and the decompressor into a temporary file beside dst, checked as an
// RDB, and renamed to dst only when its SHA-256, sizes and key count match the manifest. A
// failed restore leaves dst as it was.
func Restore(ctx context.Context, store *Store, name, dst string) (*Manifest, error) {
	m, err := store.Manifest(ctx, name)
	if err != nil {
		return nil, err
	}
	if m.Name != name || m.Object != store.key(name, dataSuffix) {
		return nil, fmt.Errorf("%w: the manifest of %s names backup %s, object %s", ErrMismatch, name, m.Name, m.Object)
	}
	obj, err := store.client.GetObject(ctx, store.loc.Bucket, m.Object, minio.GetObjectOptions{})
	if err != nil {
		return nil, storageError("reading "+m.Object, err)
	}
	defer func() { _ = obj.Close() }()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".restore-*.rdb")
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	stored := &counter{w: io.Discard, h: sha256.New()}
	zr, err := zstd.NewReader(io.TeeReader(obj, stored), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	raw := &counter{w: tmp}
	st, err := rdb.Load(io.TeeReader(zr, raw), rdb.Handler{
		Entry:    func(*rdb.Entry) error { return nil },
		Function: func([]byte) error { return nil },
	})
	if err != nil {
		var resp minio.ErrorResponse
		if errors.As(err, &resp) {
			return nil, storageError("reading "+m.Object, err)
		}
		return nil, fmt.Errorf("%w: %s is not a valid compressed RDB: %v", ErrMismatch, m.Object, err)
	}
	// Read to the end: the hash covers the whole object, and nothing may follow the RDB.
	if n, err := io.Copy(io.Discard, zr); err != nil || n != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the RDB's end (%v)", ErrMismatch, n, err)
	}
	if _, err := io.Copy(io.Discard, obj); err != nil {
		return nil, storageError("reading "+m.Object, err)
	}
	sum := hex.EncodeToString(stored.h.Sum(nil))
	switch {
	case sum != m.SHA256:
		return nil, fmt.Errorf("%w: SHA-256 %s, the manifest says %s", ErrMismatch, sum, m.SHA256)
	case stored.n != m.Size || raw.n != m.RDBSize:
		return nil, fmt.Errorf("%w: %d bytes stored and %d restored, the manifest says %d and %d", ErrMismatch, stored.n, raw.n, m.Size, m.RDBSize)
	case st.Keys != m.Keys:
		return nil, fmt.Errorf("%w: %d keys, the manifest says %d", ErrMismatch, st.Keys, m.Keys)
	}
	if err := tmp.Sync(); err != nil {
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return nil, err
	}
	ok = true
	return m, nil
}
