package config

import (
	"strings"
	"testing"
)

// FuzzReadConfig: any configuration text loads or is refused with a FileError, never a panic;
// and for every directive of a configuration that loads, the value CONFIG GET would show is
// accepted back by CONFIG SET (when the directive is live) and reads the same afterwards, which
// is what clients that save and restore settings rely on.
func FuzzReadConfig(f *testing.F) {
	for _, s := range []string{
		"port 7000\nmaxmemory 100mb\nmaxmemory-policy allkeys-lru\n",
		"save \"3600 1 300 100\"\nio-threads 2\n",
		"client-output-buffer-limit pubsub 32mb 8mb 60\n",
		"notify-keyspace-events KEA\nhz 100\n",
		"bind 127.0.0.1 -::1\n# comment\n\nappendonly no\n",
		"maxmemory -1\nport 99999\nio-threads 0\nserver_cpulist 0-1023:7\n",
		"\"unbalanced\n",
		"include /etc/passwd\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c := New()
		if err := c.ReadConfig(strings.NewReader(text)); err != nil {
			return
		}
		for _, kv := range c.Get("*") {
			name, value := kv[0], kv[1]
			if !Live(name) {
				continue
			}
			if err := c.SetLive(name, value); err != nil {
				t.Fatalf("after loading %q, CONFIG SET %s %q (its own CONFIG GET value) fails: %v", text, name, value, err)
			}
			for _, again := range c.Get(name) {
				if again[0] == name && again[1] != value {
					t.Fatalf("after loading %q, CONFIG SET %s %q reads back as %q", text, name, value, again[1])
				}
			}
		}
	})
}
