package backup

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Main runs "iocache-server backup ..." or "iocache-server restore ..." (args start with the
// subcommand) and returns the exit status. Secrets never come from flags, which ps and the pod
// spec show: the server's password from --password-file, the storage's keys from the
// environment (see credentialChain).
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: iocache-server backup|restore [flags]")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch args[0] {
	case "backup":
		err = backupMain(ctx, args[1:], stdout, stderr)
	case "restore":
		err = restoreMain(ctx, args[1:], stdout, stderr)
	default:
		err = fmt.Errorf("unknown subcommand %q: backup or restore", args[0])
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "iocache-server %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// storageFlags are the flags that name a Location.
func storageFlags(fs *flag.FlagSet) *Location {
	loc := &Location{}
	fs.StringVar(&loc.Endpoint, "endpoint", "", "the storage's URL, http:// or https://")
	fs.StringVar(&loc.Bucket, "bucket", "", "the bucket")
	fs.StringVar(&loc.Prefix, "prefix", "", "the folder of this instance's backups in the bucket")
	fs.StringVar(&loc.Region, "region", "", "the bucket's region")
	fs.BoolVar(&loc.PathStyle, "path-style", false, "address the bucket as a path, not a host name")
	fs.StringVar(&loc.CAFile, "ca-file", "", "a PEM bundle to trust for the endpoint")
	fs.StringVar(&loc.SSE, "sse", "", "server-side encryption: AES256 or aws:kms")
	fs.StringVar(&loc.SSEKMSKeyID, "sse-kms-key-id", "", "the KMS key for --sse aws:kms")
	return loc
}

// labelsFlag collects repeated --label key=value.
type labelsFlag map[string]string

func (l labelsFlag) String() string { return fmt.Sprint(map[string]string(l)) }
func (l labelsFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not key=value", v)
	}
	l[k] = val
	return nil
}

func backupMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	loc := storageFlags(fs)
	var src Source
	var name, passwordFile, jsonOut, caCert, cert, key, serverName string
	var useTLS bool
	var keep int
	var maxAge time.Duration
	labels := labelsFlag{}
	fs.StringVar(&src.Addr, "source", "", "the server to snapshot, host:port (a replica, when there is one)")
	fs.StringVar(&src.User, "user", "", "the ACL user to authenticate as")
	fs.StringVar(&passwordFile, "password-file", "", "a file holding the password")
	fs.BoolVar(&useTLS, "tls", false, "connect to the server with TLS")
	fs.StringVar(&caCert, "tls-ca-cert-file", "", "the CA that signs the server's certificate")
	fs.StringVar(&cert, "tls-cert-file", "", "a client certificate")
	fs.StringVar(&key, "tls-key-file", "", "the client certificate's key")
	fs.StringVar(&serverName, "tls-server-name", "", "the name the server's certificate must carry")
	fs.DurationVar(&src.Timeout, "timeout", 60*time.Second, "the longest wait for the server on any read")
	fs.StringVar(&name, "name", "", "the backup's name (default: the UTC time, 20060102T150405Z)")
	fs.Var(labels, "label", "key=value recorded in the manifest (repeatable)")
	fs.IntVar(&keep, "keep", 0, "after success, keep this many complete backups (0: all)")
	fs.DurationVar(&maxAge, "max-age", 0, "after success, delete complete backups older than this, never the newest (0: none)")
	fs.StringVar(&jsonOut, "json-out", "", "also write the manifest as JSON to this file (/dev/termination-log in a Job)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if src.Addr == "" {
		return errors.New("--source is required")
	}
	if passwordFile != "" {
		b, err := os.ReadFile(passwordFile)
		if err != nil {
			return err
		}
		src.Password = strings.TrimRight(string(b), "\r\n")
	}
	if useTLS {
		cfg, err := clientTLS(caCert, cert, key, serverName)
		if err != nil {
			return err
		}
		src.TLS = cfg
	}
	store, err := Open(*loc)
	if err != nil {
		return err
	}
	if name == "" {
		name = time.Now().UTC().Format("20060102T150405Z")
	}
	m, err := Run(ctx, src, store, name, Options{Labels: labels})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backup %s: %d keys, %d bytes of RDB stored as %d (%s)\n", m.Name, m.Keys, m.RDBSize, m.Size, m.Object)
	if keep > 0 || maxAge > 0 {
		deleted, err := store.Prune(ctx, Retention{Keep: keep, MaxAge: maxAge}, time.Now())
		for _, d := range deleted {
			fmt.Fprintf(stdout, "retention: deleted backup %s\n", d.Name)
		}
		if err != nil {
			return fmt.Errorf("the backup is complete, but retention failed: %w", err)
		}
	}
	return writeJSON(jsonOut, m)
}

func restoreMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	loc := storageFlags(fs)
	var name, dst, jsonOut, pendingFile string
	var keepExisting bool
	fs.StringVar(&name, "name", "", "the backup to restore")
	fs.StringVar(&dst, "to", "", "the RDB file to write (the server's dir/dbfilename)")
	fs.StringVar(&jsonOut, "json-out", "", "also write the manifest as JSON to this file")
	fs.StringVar(&pendingFile, "pending-file", "", "restore only while this file exists (an operator removes it once the instance is bootstrapped)")
	fs.BoolVar(&keepExisting, "keep-existing", false, "do nothing when the directory of --to already holds data (the RDB file or an appendonlydir)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if name == "" || dst == "" {
		return errors.New("--name and --to are required")
	}
	if pendingFile != "" {
		if _, err := os.Stat(pendingFile); errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stdout, "no restore pending (%s is absent): starting from what the volume holds\n", pendingFile)
			return nil
		}
	}
	if keepExisting {
		if held := existingData(dst); held != "" {
			fmt.Fprintf(stdout, "%s already holds data: kept, backup %s not restored\n", held, name)
			return nil
		}
	}
	store, err := Open(*loc)
	if err != nil {
		return err
	}
	m, err := Restore(ctx, store, name, dst)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored backup %s: %d keys, %d bytes of RDB in %s\n", m.Name, m.Keys, m.RDBSize, dst)
	return writeJSON(jsonOut, m)
}

// existingData names what in the directory of dst a server would load at start (dst itself, or
// an AOF directory), or "" when there is nothing.
func existingData(dst string) string {
	for _, p := range []string{dst, filepath.Join(filepath.Dir(dst), "appendonlydir")} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func writeJSON(path string, m *Manifest) error {
	if path == "" {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func clientTLS(caFile, certFile, keyFile, serverName string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
		}
	}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
