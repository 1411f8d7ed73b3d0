package acl

import (
	"strings"
	"testing"
)

// The same denial within a minute is counted in one entry; another, or one later, is not.
func TestLogEntryMerge(t *testing.T) {
	d := Denial{Reason: DeniedKey, Context: "toplevel", Object: "k", Username: "alice"}
	e := NewLogEntry(d, 1000, "id=1")
	if !e.Merge(d, 1000+LogGroupMs-1, "id=2") || e.Count != 2 || e.UpdatedMs != 1000+LogGroupMs-1 || e.ClientInfo != "id=2" {
		t.Errorf("same denial: %+v", e)
	}
	other := d
	other.Context = "multi"
	if e.Merge(other, 2000, "") || e.Merge(d, e.UpdatedMs+LogGroupMs, "") || e.Count != 2 {
		t.Errorf("another denial, or one a minute later, was counted: %+v", e)
	}
	long := Denial{Reason: DeniedCommand, Context: "toplevel", Object: strings.Repeat("o", 200), Username: strings.Repeat("u", 200)}
	e = NewLogEntry(long, 0, "")
	if len(e.Object) != 128 || len(e.Username) != 128 || e.Reason.String() != "command" {
		t.Errorf("long entry: %+v", e)
	}
	if DeniedAuth.String() != "auth" || DeniedChannel.String() != "channel" || DeniedKey.String() != "key" {
		t.Error("Reason.String")
	}
}
