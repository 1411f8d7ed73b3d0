package config

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/iocache/iocache/server/cpuset"
	"github.com/iocache/iocache/server/glob"
	"github.com/iocache/iocache/server/resp"
)

// Errors CONFIG SET reports; the engine turns them into Redis's reply texts.
var (
	ErrUnknown   = errors.New("unknown option or number of arguments")
	ErrImmutable = errors.New("can't set immutable config")
	// ErrProtected refuses a live change of a protected directive (dir, dbfilename).
	ErrProtected = errors.New("can't set protected config")
)

// FileError is a startup configuration error, printed the way redis-server prints it.
type FileError struct {
	Line    int // 1-based; 0 for command-line arguments
	Text    string
	Message string
}

func (e *FileError) Error() string {
	where := "Reading the configuration file, at line " + strconv.Itoa(e.Line)
	if e.Line == 0 {
		where = "Reading the command-line arguments"
	}
	return fmt.Sprintf("\n*** FATAL CONFIG FILE ERROR ***\n%s\n>>> '%s'\n%s", where, e.Text, e.Message)
}

// ParseCPUList reads a taskset-style CPU list ("0-7:2,9,12-13"); see package cpuset.
func ParseCPUList(s string) ([]int, error) { return cpuset.Parse(s) }

// ParseMemory reads a memory size as redis.conf writes them: 1k = 1000, 1kb = 1024, likewise m/mb
// and g/gb; a plain number is bytes.
func ParseMemory(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1000}, {"m", 1000 * 1000}, {"g", 1000 * 1000 * 1000}, {"b", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid memory value %q", s)
	}
	if v < 0 || (v > 0 && mult > (1<<62)/v) {
		return 0, fmt.Errorf("memory value %q out of range", s)
	}
	return v * mult, nil
}

// Set applies one directive; it is what a config file line, a flag and CONFIG SET all go through.
// When running is true, directives that cannot change live are refused with ErrImmutable.
func (c *Config) Set(name string, args []string, running bool) error {
	d, ok := table[canonicalName(name)]
	if !ok {
		return ErrUnknown
	}
	if running && d.fileOnly {
		return ErrUnknown
	}
	if running && d.protected && c.Compat["enable-protected-configs"] != "yes" {
		return ErrProtected
	}
	if running && !d.mutable {
		// Setting such a directive to the value it has changes nothing, so there is nothing to
		// apply: accepted, as Redis accepts it for the directives it can change live (bind,
		// port...), which Redis's test suite does for every directive.
		if !redisImmutable[d.name] && strings.Join(args, " ") == d.get(c) {
			return nil
		}
		return ErrImmutable
	}
	if len(args) == 0 || (!d.multiArg && len(args) != 1) {
		return ErrUnknown
	}
	if !running && d.name == "save" {
		return addSavePoints(c, args)
	}
	return d.set(c, args)
}

// redisImmutable are the directives Redis 7.0 never changes live (IMMUTABLE_CONFIG in its
// config.c): CONFIG SET refuses them whatever the value.
var redisImmutable = map[string]bool{
	"aclfile": true, "always-show-logo": true, "aof_rewrite_cpulist": true, "appenddirname": true,
	"appendfilename": true, "bgsave_cpulist": true, "bio_cpulist": true, "cluster-config-file": true,
	"cluster-enabled": true, "cluster-port": true, "daemonize": true, "databases": true, "disable-thp": true,
	"enable-debug-command": true, "enable-module-command": true, "enable-protected-configs": true,
	"io-threads": true, "io-threads-do-reads": true, "logfile": true, "pidfile": true, "rdbchecksum": true,
	"replicaof": true, "server_cpulist": true, "set-proc-title": true, "socket-mark-id": true, "supervised": true,
	"syslog-enabled": true, "syslog-facility": true, "syslog-ident": true, "tcp-backlog": true,
	"unixsocket": true, "unixsocketperm": true,
}

// SetLive applies one CONFIG SET name value: the value is one argument, which the directives
// that take several (save, client-output-buffer-limit) split at spaces, as Redis does.
func (c *Config) SetLive(name, value string) error {
	values := []string{value}
	if strings.EqualFold(name, "save") || strings.EqualFold(name, "client-output-buffer-limit") {
		if values = strings.Fields(value); len(values) == 0 {
			values = []string{""}
		}
	}
	return c.Set(name, values, true)
}

// Get returns name/value pairs of every directive whose name matches the glob pattern, sorted by
// name, as CONFIG GET replies them. As in Redis, a pattern lists Redis's aliases (slave-read-only)
// besides the names, each under its own name, and leaves out hidden directives; a plain name is
// looked up as it is, alias or hidden, and answered under the name it was asked by.
func (c *Config) Get(pattern string) [][2]string {
	if !strings.ContainsAny(pattern, "*?[") {
		d, ok := table[canonicalName(pattern)]
		if !ok || d.fileOnly {
			return nil
		}
		return [][2]string{{pattern, d.get(c)}}
	}
	var out [][2]string
	for _, name := range listed {
		d := table[name]
		if glob.MatchString(pattern, name, true) {
			out = append(out, [2]string{name, d.get(c)})
		}
	}
	return out
}

// listed are the names and aliases a CONFIG GET pattern may match, sorted.
var listed = func() []string {
	var names []string
	for name, d := range table {
		if !d.fileOnly && !d.hidden {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}()

// Load builds the configuration redis-server style: an optional config file path as the first
// argument ("-" reads standard input), then `--name value ...` flags that override it.
func Load(args []string, stdin io.Reader) (*Config, error) {
	c := New()
	if len(args) > 0 && !strings.HasPrefix(args[0], "--") {
		var r io.Reader
		if args[0] == "-" {
			r = stdin
		} else {
			f, err := os.Open(args[0])
			if err != nil {
				return nil, fmt.Errorf("Fatal error, can't open config file '%s': %w", args[0], err)
			}
			defer f.Close()
			r = f
			// Absolute, as Redis keeps it: `dir` changes the working directory.
			if c.File, err = filepath.Abs(args[0]); err != nil {
				return nil, err
			}
		}
		if err := c.ReadConfig(r); err != nil {
			return nil, err
		}
		args = args[1:]
	}
	var name string
	var values []string
	flush := func() error {
		if name == "" {
			return nil
		}
		if len(values) == 0 {
			values = []string{""}
		}
		values = splitSoleArgument(name, values)
		if err := c.Set(name, values, false); err != nil {
			return &FileError{Text: name + " " + strings.Join(values, " "), Message: message(err)}
		}
		name, values = "", nil
		return nil
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--") && len(a) > 2 {
			if err := flush(); err != nil {
				return nil, err
			}
			name = a[2:]
			continue
		}
		if name == "" {
			return nil, &FileError{Text: a, Message: "Bad directive or wrong number of arguments"}
		}
		values = append(values, a)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return c, nil
}

// splitSoleArgument reads a directive of several arguments given them all in one command-line
// argument (`--replicaof "127.0.0.1 6380"`, `--bind "127.0.0.1 ::1"`, as docker-compose files
// and guides write them) as its arguments, as redis-server does. A directive of one argument
// keeps it whole: `--maxmemory "100mb 5"` is refused, as by Redis.
func splitSoleArgument(name string, values []string) []string {
	d, ok := table[canonicalName(name)]
	if !ok || !d.multiArg || len(values) != 1 || !strings.ContainsAny(values[0], " \t") {
		return values
	}
	if split, err := SplitArgs(values[0]); err == nil && len(split) > 0 {
		return split
	}
	return values
}

// ReadConfig applies a redis.conf-syntax configuration.
func (c *Config) ReadConfig(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		argv, err := SplitArgs(text)
		if err != nil {
			return &FileError{Line: line, Text: text, Message: "Unbalanced quotes in configuration line"}
		}
		if len(argv) == 0 {
			continue
		}
		if strings.EqualFold(argv[0], "include") {
			return &FileError{Line: line, Text: text, Message: "include is not supported; pass one file and --flags"}
		}
		c.loadingLine = line
		err = c.Set(argv[0], argv[1:], false)
		c.loadingLine = 0
		if err != nil {
			return &FileError{Line: line, Text: text, Message: message(err)}
		}
	}
	return sc.Err()
}

func message(err error) string {
	if errors.Is(err, ErrUnknown) || errors.Is(err, errWrongArgs) {
		return "Bad directive or wrong number of arguments"
	}
	return err.Error()
}

// SplitArgs splits a config line the way Redis's sdssplitargs does (see resp.SplitArgs).
func SplitArgs(line string) ([]string, error) {
	args, ok := resp.SplitArgs([]byte(line), nil)
	if !ok {
		return nil, errors.New("unbalanced quotes")
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out, nil
}
