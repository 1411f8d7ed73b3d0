package engine

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/commands.md and the README's list of missing commands")

// docs/commands.md and the README's list of Redis 7.0 commands iocache lacks are written from the
// command table and Redis's own list (command_status.go). Run
//
//	go test ./server/engine -run TestCommandStatusDocs -update-docs
//
// after adding a command.
func TestCommandStatusDocs(t *testing.T) {
	s, _ := startServer(t, nil)
	statuses := s.redisCommandStatuses()
	var doc strings.Builder
	doc.WriteString("# Redis 7.0 commands in iocache\n\n")
	doc.WriteString("Every command and subcommand that Redis 7.0.15 lists (`COMMAND LIST`), and whether iocache has it.\n")
	doc.WriteString("Written by `go test ./server/engine -run TestCommandStatusDocs -update-docs` from the command table\n")
	doc.WriteString("and `server/engine/command_status.go`; the test fails when this file is out of date. Replies and\n")
	doc.WriteString("errors of implemented commands are compared with `redis-server` by the differential tests\n")
	doc.WriteString("(`differential` in `server/engine/peer_test.go` and its callers).\n\n")
	var missing []string
	implemented := 0
	doc.WriteString("| command | in iocache |\n|---|---|\n")
	for _, st := range statuses {
		state := "yes"
		switch {
		case !st.implemented:
			state = "no"
			missing = append(missing, "`"+strings.ToUpper(strings.ReplaceAll(st.name, "|", " "))+"`")
		case st.note != "":
			state = "partly: " + st.note
			implemented++
		default:
			implemented++
		}
		fmt.Fprintf(&doc, "| `%s` | %s |\n", strings.ToUpper(strings.ReplaceAll(st.name, "|", " ")), state)
	}
	fmt.Fprintf(&doc, "\n%d of %d implemented.\n", implemented, len(statuses))
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- missing-commands: written by TestCommandStatusDocs -->\n", "<!-- end missing-commands -->"
	i, j := strings.Index(string(readme), begin), strings.Index(string(readme), end)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the %q ... %q markers", begin, end)
	}
	names := strings.Join(missing, ", ")
	if len(missing) == 0 {
		names = "none"
	}
	list := "Redis 7.0 commands not implemented ([docs/commands.md](docs/commands.md)): " + names + ".\n"
	newReadme := string(readme[:i+len(begin)]) + list + string(readme[j:])
	if *updateDocs {
		if err := os.WriteFile("../../docs/commands.md", []byte(doc.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("../../README.md", []byte(newReadme), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if old, _ := os.ReadFile("../../docs/commands.md"); string(old) != doc.String() {
		t.Errorf("docs/commands.md is out of date: run go test ./server/engine -run TestCommandStatusDocs -update-docs")
	}
	if newReadme != string(readme) {
		t.Errorf("README.md's list of missing commands is out of date: run go test ./server/engine -run TestCommandStatusDocs -update-docs")
	}
}
