package controllers

import (
	"strings"
	"testing"
)

// A roll names the start-only directives that changed, came or went; live ones are not a reason.
func TestRollReasonsNameStartOnlyDirectives(t *testing.T) {
	prev := "port 6379\ndatabases 32\nrename-command FLUSHALL \"\"\nhz 20\n"
	cur := "port 6379\ndatabases 64\ntcp-backlog 1024\n"
	got := rollReasons("img", "img", nil, nil, prev, cur)
	for _, want := range []string{"databases 32 -> 64 (read at start only)", `tcp-backlog "" -> 1024 (read at start only)`,
		`rename-command FLUSHALL "" removed (read at start only)`} {
		if !strings.Contains(got, want) {
			t.Errorf("rollReasons = %q, want it to say %q", got, want)
		}
	}
	if strings.Contains(got, "hz") {
		t.Errorf("rollReasons = %q names hz, which changes live", got)
	}
}
