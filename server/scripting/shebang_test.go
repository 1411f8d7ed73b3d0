package scripting

import (
	"testing"
)

// ParseShebang reads flags and errors as Redis's evalExtractShebangFlags does, and keeps the
// shebang line's newline so that errors name the body's own line numbers.
func TestParseShebang(t *testing.T) {
	for _, tc := range []struct {
		body, code string
		flags      Flags
		err        string
	}{
		{"return 1", "return 1", 0, ""},
		{"#!lua\nreturn 1", "\nreturn 1", Shebang, ""},
		{"#!lua flags=no-writes,allow-oom\nreturn 1", "\nreturn 1", Shebang | NoWrites | AllowOOM, ""},
		{"#!lua flags=allow-stale,no-cluster,allow-cross-slot-keys\n", "\n", Shebang | AllowStale | NoCluster | AllowCrossSlotKeys, ""},
		{"#!lua flags=\nreturn 1", "\nreturn 1", Shebang, ""},
		{"#!lua", "", 0, "Invalid script shebang"},
		{"#!notlua\nreturn 1", "", 0, "Unexpected engine in script shebang: #!notlua"},
		{"#!LUA\nreturn 1", "", 0, "Unexpected engine in script shebang: #!LUA"},
		{"#!lua name=x\nreturn 1", "", 0, "Unknown lua shebang option: name=x"},
		{"#!lua flags=bogus\nreturn 1", "", 0, "Unexpected flag in script shebang: bogus"},
		{"#!lua flags=no-writes,\nreturn 1", "", 0, "Unexpected flag in script shebang: "},
	} {
		flags, code, err := ParseShebang([]byte(tc.body))
		errText := ""
		if err != nil {
			errText = err.Error()
		}
		if flags != tc.flags || string(code) != tc.code || errText != tc.err {
			t.Errorf("%q: got %b %q %q, want %b %q %q", tc.body, flags, code, errText, tc.flags, tc.code, tc.err)
		}
	}
}
