package bench

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/iocache/iocache/server/tlschain"
)

const usage = `Usage: iocache-bench [--host H] [--port P] [--user U] [--password PW | --password-file F]
                     [--tls [--cacert F] [--cert F --key F]]
                     [--clients N] [--threads N]
                     [--pipeline N] [--data-size B] [--keyspace N] [--ratio SET:GET]
                     [--tests mixed,get,set,ping,incr,lpush] [--requests N | --duration D]
                     [--warmup D] [--benchspace] [--key-prefix P]
                     [--json | --json-full] [--json-out FILE] [-q]

Load generator for Redis-compatible servers (iocache-server, redis-server). Prints one line per
test as redis-benchmark -q does, or with --json a result an operator can parse (see docs/bench.md).
Exits 1 when the run failed (no connection, every request errored), 2 on a usage error.

`

// Options are the command-line settings of a run.
type Options struct {
	Host     string
	Port     int
	User     string // AUTH user password when set, else AUTH password (the default user)
	Password string
	Clients  int // connections, each driven by exactly one goroutine
	Threads  int // goroutines that drive the connections
	Pipeline int // requests written per batch on one connection
	DataSize int // bytes in a SET/LPUSH value
	Keyspace int64
	RatioSet int // the mixed test sends RatioSet SETs per RatioGet GETs, memtier's --ratio
	RatioGet int
	Tests    []string
	Requests int64         // per test; 0 in --duration mode
	Duration time.Duration // per test; 0 in --requests mode
	Warmup   time.Duration
	// BenchSpace runs the measured connections in iocache-server's bench space (BENCHSPACE
	// ENTER), a scratch keyspace apart from the user's data, so a run against a live instance
	// leaves its keys, evictions and hit/miss statistics as they were.
	BenchSpace bool
	// KeyPrefix goes before every key the tests name (key:, counter:, mylist), so an ACL key
	// pattern can confine a run's user to keys no application uses.
	KeyPrefix string
	JSON      bool   // print the compact JSON result instead of the table
	JSONFull  bool   // print the full JSON result (raw INFO text too)
	JSONOut   string // also write the compact JSON result to this file (/dev/termination-log)
	Quiet     bool   // only the per-test lines
	Timeout   time.Duration
	// TLS, when set, wraps every connection in TLS (--tls): the server's chain is checked against
	// --cacert (the system's roots without it), not its name, as Redis's own clients do.
	TLS *tls.Config
}

// defaultOptions are the settings the operator runs with unless told otherwise.
func defaultOptions() Options {
	return Options{
		Host: "127.0.0.1", Port: 6379, Clients: 50, Threads: 2, Pipeline: 1, DataSize: 256,
		Keyspace: 100000, RatioSet: 1, RatioGet: 10, Tests: []string{"mixed"}, Timeout: 10 * time.Second,
	}
}

// errHelp asks Main to print the usage and exit 0.
var errHelp = errors.New("help requested")

// flagSet declares the flags onto o; the returned strings are parsed after flag.Parse.
type flagSet struct {
	*flag.FlagSet
	ratio, tests, passwordFile *string
	caFile, certFile, keyFile  *string
	help, useTLS               *bool
}

func newFlagSet(o *Options) flagSet {
	fs := flag.NewFlagSet("iocache-bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // Main prints the error and the usage itself
	f := flagSet{FlagSet: fs}
	fs.StringVar(&o.Host, "host", o.Host, "server host")
	fs.IntVar(&o.Port, "port", o.Port, "server port")
	fs.StringVar(&o.User, "user", "", "ACL user to authenticate as (AUTH user password); the default user without it")
	fs.StringVar(&o.Password, "password", "", "AUTH password (requirepass, or --user's)")
	f.passwordFile = fs.String("password-file", "", "read the AUTH password from this file (a mounted Secret), so it is on no command line")
	fs.IntVar(&o.Clients, "clients", o.Clients, "connections")
	fs.IntVar(&o.Threads, "threads", o.Threads, "goroutines driving the connections, each its own share")
	fs.IntVar(&o.Pipeline, "pipeline", o.Pipeline, "requests per batch on a connection")
	fs.IntVar(&o.DataSize, "data-size", o.DataSize, "value size in bytes")
	fs.Int64Var(&o.Keyspace, "keyspace", o.Keyspace, "random keys key:NNNNNNNNNNNN over this many keys")
	f.ratio = fs.String("ratio", "1:10", "SET:GET ratio of the mixed test")
	f.tests = fs.String("tests", "mixed", "comma-separated tests: "+strings.Join(testNames, ","))
	fs.Int64Var(&o.Requests, "requests", 0, "requests per test (100000 unless --duration)")
	fs.DurationVar(&o.Duration, "duration", 0, "run each test this long instead of --requests")
	fs.DurationVar(&o.Warmup, "warmup", 0, "fill the keyspace with SETs this long before measuring")
	fs.BoolVar(&o.BenchSpace, "benchspace", false, "work in iocache-server's bench space (BENCHSPACE ENTER), never touching the user's keys")
	fs.StringVar(&o.KeyPrefix, "key-prefix", "", "put this before every key name (for an ACL user confined to ~PREFIX*)")
	fs.BoolVar(&o.JSON, "json", false, "print the compact JSON result (at most 4096 bytes)")
	fs.BoolVar(&o.JSONFull, "json-full", false, "print the full JSON result, raw INFO text included")
	fs.StringVar(&o.JSONOut, "json-out", "", "also write the compact JSON result to this file")
	fs.BoolVar(&o.Quiet, "q", false, "print only the per-test lines")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "give up when the server answers nothing this long")
	f.useTLS = fs.Bool("tls", false, "connect with TLS (a tls-port), as redis-benchmark --tls")
	f.caFile = fs.String("cacert", "", "CA certificate file to verify the server with (with --tls)")
	f.certFile = fs.String("cert", "", "client certificate file, for tls-auth-clients yes (with --tls)")
	f.keyFile = fs.String("key", "", "client key file (with --tls)")
	f.help = fs.Bool("help", false, "print this help")
	fs.BoolVar(f.help, "h", false, "print this help")
	return f
}

// printDefaults lists the flags and their defaults after the usage line.
func printDefaults(w io.Writer) {
	o := defaultOptions()
	fs := newFlagSet(&o)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// parseArgs parses the command line. Go's flag package accepts both -flag and --flag.
func parseArgs(args []string) (Options, error) {
	o := defaultOptions()
	fs := newFlagSet(&o)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, errHelp
		}
		return o, err
	}
	if *fs.help {
		return o, errHelp
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if *fs.passwordFile != "" {
		if o.Password != "" {
			return o, errors.New("give --password or --password-file, not both")
		}
		b, err := os.ReadFile(*fs.passwordFile)
		if err != nil {
			return o, fmt.Errorf("--password-file: %w", err)
		}
		// As iocache-server reads requirepass-file: a trailing line break is not part of it.
		o.Password = strings.TrimRight(string(b), "\r\n")
	}
	if o.TLS, err = tlsConfig(*fs.useTLS, *fs.caFile, *fs.certFile, *fs.keyFile); err != nil {
		return o, err
	}
	if o.RatioSet, o.RatioGet, err = parseRatio(*fs.ratio); err != nil {
		return o, err
	}
	if o.Tests, err = parseTests(*fs.tests); err != nil {
		return o, err
	}
	return o, o.validate()
}

func (o *Options) validate() error {
	switch {
	case o.Clients < 1:
		return errors.New("--clients must be at least 1")
	case o.Threads < 1:
		return errors.New("--threads must be at least 1")
	case o.Pipeline < 1:
		return errors.New("--pipeline must be at least 1")
	case o.DataSize < 0 || o.DataSize > 512<<20:
		return errors.New("--data-size must be between 0 and 512 MiB")
	case o.Keyspace < 1 || o.Keyspace > maxKeyspace:
		return fmt.Errorf("--keyspace must be between 1 and %d", int64(maxKeyspace))
	case o.Port < 1 || o.Port > 65535:
		return errors.New("--port must be between 1 and 65535")
	case o.Requests < 0 || o.Duration < 0 || o.Warmup < 0:
		return errors.New("--requests, --duration and --warmup must not be negative")
	case o.Requests > 0 && o.Duration > 0:
		return errors.New("give --requests or --duration, not both")
	case o.Timeout <= 0:
		return errors.New("--timeout must be positive")
	case o.User != "" && o.Password == "":
		return errors.New("--user needs --password or --password-file")
	case strings.ContainsAny(o.KeyPrefix, " \r\n"):
		return errors.New("--key-prefix must not contain spaces or line breaks")
	}
	if o.Threads > o.Clients {
		o.Threads = o.Clients // a goroutine without a connection would only add noise
	}
	if o.Requests == 0 && o.Duration == 0 {
		o.Requests = 100000 // redis-benchmark's default
	}
	return nil
}

// parseRatio parses memtier's SET:GET ratio, e.g. 1:10.
func parseRatio(s string) (set, get int, err error) {
	a, b, ok := strings.Cut(s, ":")
	if ok {
		set, err = strconv.Atoi(a)
		if err == nil {
			get, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || set < 0 || get < 0 || set+get == 0 || set+get > 1<<20 {
		return 0, 0, fmt.Errorf("--ratio %q: want SET:GET, e.g. 1:10", s)
	}
	return set, get, nil
}

func parseTests(s string) ([]string, error) {
	var out []string
	for _, t := range strings.Split(s, ",") {
		t = strings.ToLower(strings.TrimSpace(t))
		if t == "" {
			continue
		}
		if _, ok := testByName(t); !ok {
			return nil, fmt.Errorf("--tests: unknown test %q (have %s)", t, strings.Join(testNames, ","))
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, errors.New("--tests: no test given")
	}
	return out, nil
}

func (o *Options) ratioString() string {
	return strconv.Itoa(o.RatioSet) + ":" + strconv.Itoa(o.RatioGet)
}

// tlsConfig is the client side of --tls: the server's chain is verified against caFile (the
// system's roots without it) but not its host name, since a benchmark may reach the server by
// any name or address (Redis's clients check no name either); certFile and keyFile are presented
// to a server that asks for a client certificate.
func tlsConfig(on bool, caFile, certFile, keyFile string) (*tls.Config, error) {
	if !on {
		if caFile != "" || certFile != "" || keyFile != "" {
			return nil, errors.New("--cacert, --cert and --key need --tls")
		}
		return nil, nil
	}
	var roots *x509.CertPool
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("--cacert: %w", err)
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--cacert %s: no PEM certificate in it", caFile)
		}
	}
	//nolint:gosec // the chain is verified in VerifyPeerCertificate, without the host name
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true}
	cfg.VerifyPeerCertificate = tlschain.Verifier(roots, false)
	if certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("--cert/--key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
