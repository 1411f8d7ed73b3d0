package backup

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/encrypt"
)

// Location is where backups live: a bucket and a prefix on an S3-compatible endpoint.
type Location struct {
	// Endpoint is the storage's URL, http:// or https:// (the scheme decides TLS).
	Endpoint string
	Bucket   string
	// Prefix is the folder of this instance's backups inside the bucket ("" for the top).
	Prefix string
	Region string
	// PathStyle addresses the bucket as a path (endpoint/bucket/key) instead of a host name
	// (bucket.endpoint/key), as most self-hosted servers need.
	PathStyle bool
	// CAFile is a PEM bundle trusted for the endpoint's certificate, besides the system's.
	CAFile string
	// SSE asks the storage to encrypt what it stores: "" (the bucket's default), "AES256"
	// (SSE-S3) or "aws:kms" with SSEKMSKeyID.
	SSE         string
	SSEKMSKeyID string
}

// Store is an open Location.
type Store struct {
	loc    Location
	client *minio.Client
	sse    encrypt.ServerSide
}

// Credentials come from the environment, in the order the AWS SDKs use: AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN), MinIO's MINIO_* names, the shared credentials
// file, then the workload's identity (a web identity token file, as EKS and other clusters
// mount for a service account, or the instance's metadata service).
func credentialChain() *credentials.Credentials {
	return credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{},
		&credentials.EnvMinio{},
		&credentials.FileAWSCredentials{},
		&credentials.IAM{},
	})
}

// Open checks loc and makes its client; it does not reach the storage.
func Open(loc Location) (*Store, error) {
	if loc.Bucket == "" {
		return nil, errors.New("backup: no bucket")
	}
	u, err := url.Parse(loc.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("backup: endpoint %q is not an http:// or https:// URL", loc.Endpoint)
	}
	transport, err := minio.DefaultTransport(u.Scheme == "https")
	if err != nil {
		return nil, err
	}
	if loc.CAFile != "" {
		pem, err := os.ReadFile(loc.CAFile)
		if err != nil {
			return nil, fmt.Errorf("backup: CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("backup: CA file %s holds no PEM certificate", loc.CAFile)
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	lookup := minio.BucketLookupDNS
	if loc.PathStyle {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:        credentialChain(),
		Secure:       u.Scheme == "https",
		Transport:    http.RoundTripper(transport),
		Region:       loc.Region,
		BucketLookup: lookup,
	})
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	s := &Store{loc: loc, client: client}
	switch strings.ToLower(loc.SSE) {
	case "":
	case "aes256":
		s.sse = encrypt.NewSSE()
	case "aws:kms":
		if s.sse, err = encrypt.NewSSEKMS(loc.SSEKMSKeyID, nil); err != nil {
			return nil, fmt.Errorf("backup: %w", err)
		}
	default:
		return nil, fmt.Errorf("backup: server-side encryption %q is not AES256 or aws:kms", loc.SSE)
	}
	return s, nil
}

// key is the object key of a file of backup name ("<prefix>/<name><suffix>").
func (s *Store) key(name, suffix string) string {
	return path.Join(s.loc.Prefix, name+suffix)
}

// Object suffixes: the compressed RDB, and the manifest that marks it complete.
const (
	dataSuffix     = ".rdb.zst"
	manifestSuffix = ".json"
)

// storageError keeps the storage's own message (its code and text) in what a caller reports.
func storageError(op string, err error) error {
	var resp minio.ErrorResponse
	if errors.As(err, &resp) && resp.Code != "" {
		return fmt.Errorf("%s: %s: %s", op, resp.Code, resp.Message)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// exists says whether an object is there.
func (s *Store) exists(ctx context.Context, key string) (bool, error) {
	_, err := s.client.StatObject(ctx, s.loc.Bucket, key, minio.StatObjectOptions{})
	if err == nil {
		return true, nil
	}
	if minio.ToErrorResponse(err).Code == "NoSuchKey" || minio.ToErrorResponse(err).StatusCode == http.StatusNotFound {
		return false, nil
	}
	return false, storageError("stat "+key, err)
}
